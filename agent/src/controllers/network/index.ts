// The networking controllers as a set the integrator registers into machined's
// ControllerRuntime (with networkDefinitions registered into the store first).

import path from "node:path";
import { writeFile } from "node:fs/promises";
import type { Controller } from "../../resources/controller-runtime.js";
import { writeFileInPlace } from "../../sys/atomic-file.js";
import type { NetKernel } from "../../sys/net.js";
import { sysfsLinkInfo } from "../../sys/net-sysfs.js";
import { logger } from "../../log.js";
import { parseCmdlineNetworking } from "../../network/cmdline.js";
import type { Paths } from "../../sys/paths.js";
import { AddressStatusController } from "./address-status.js";
import { HostnameConfigController, ResolverConfigController, TimeServerConfigController } from "./defaults.js";
import { AddressSpecController } from "./address-spec.js";
import type { NetworkChangeHold } from "./change-hold.js";
import { EtcFileController } from "./etc-files.js";
import {
  AddressConfigController,
  LinkConfigController,
  OperatorConfigController,
  OperatorVipConfigController,
  RouteConfigController,
} from "./config-layers.js";
import { Dhcp4OperatorController, type Dhcp4OperatorOptions } from "./dhcp4-operator.js";
import { type LinkDetailsReader, LinkStatusController } from "./link-status.js";
import { LinkSpecController } from "./link-spec.js";
import { AddressMergeController, LinkMergeController, OperatorMergeController, RouteMergeController } from "./merge.js";
import { RouteSpecController } from "./route-spec.js";
import { NetworkStatusController } from "./network-status.js";
import { NodeAddressController } from "./node-address.js";
import { NodeAddressFilterController } from "./node-address-filter.js";
import { RouteStatusController } from "./route-status.js";
import { HostnameStatusController, ResolverStatusController, TimeServerStatusController } from "./status.js";

export { networkDefinitions } from "../../resources/catalog/network.js";
export { Dhcp4OperatorController } from "./dhcp4-operator.js";
export { NetworkChangeHold } from "./change-hold.js";

export interface NetworkControllersOptions {
  kernel: NetKernel;
  paths: Paths;
  /** Node mode: apply the network specs (links, addresses, routes) and run the DHCPv4 operators (false: observe only). */
  dhcp?: boolean;
  /** Extra DHCP operator options (tests' transports and timers). */
  dhcpOptions?: Omit<Dhcp4OperatorOptions, "kernel">;
  /** Write <paths.etc>/resolv.conf and hosts (default true). */
  writeResolvConf?: boolean;
  /** Set the kernel hostname through <paths.proc>/sys/kernel/hostname (only on a node: default false). */
  setKernelHostname?: boolean;
  /** Kernel command line text (/proc/cmdline): talos.hostname, talos.network.interface.ignore, ip=, vlan=. */
  cmdline?: string;
  /** Driver/bus/speed facts per link; default: sysfs under paths.sys. */
  linkDetails?: LinkDetailsReader;
  /** Holds the links, addresses and routes back while an apply's reply is on its way. */
  hold?: NetworkChangeHold;
}

export function networkControllers(opts: NetworkControllersOptions): Controller[] {
  const cmdline = parseCmdlineNetworking(opts.cmdline ?? "");
  if (cmdline.unsupported.length > 0)
    logger("network").warn("kernel arguments not supported yet", { args: cmdline.unsupported });
  const controllers: Controller[] = [
    new LinkStatusController(opts.kernel, opts.linkDetails ?? defaultLinkDetails(opts.paths)),
    new AddressStatusController(opts.kernel),
    new RouteStatusController(opts.kernel),
    new NodeAddressController(),
    new NodeAddressFilterController(),
    new HostnameConfigController(
      cmdline.hostname ? { hostname: cmdline.hostname, domainname: cmdline.domainname ?? "" } : undefined,
    ),
    new ResolverConfigController(cmdline.dnsServers),
    new TimeServerConfigController(cmdline.timeServers),
    new HostnameStatusController(
      opts.setKernelHostname
        ? async (hostname, domainname) => {
            const kernelDir = path.join(opts.paths.proc, "sys", "kernel");
            await writeFile(path.join(kernelDir, "hostname"), hostname);
            await writeFile(path.join(kernelDir, "domainname"), domainname || "(none)");
          }
        : undefined,
    ),
    new ResolverStatusController(),
    new TimeServerStatusController(),
    new NetworkStatusController(),
  ];
  if (opts.writeResolvConf !== false) {
    const podResolvConf = path.join(opts.paths.system, "resolved", "resolv.conf");
    controllers.push(
      new EtcFileController((name, text) =>
        writeFileInPlace(name === "pod-resolv.conf" ? podResolvConf : path.join(opts.paths.etc, name), text, 0o644),
      ),
    );
  }
  if (opts.dhcp !== false) {
    controllers.push(
      new AddressConfigController(cmdline),
      new RouteConfigController(cmdline),
      new LinkConfigController(cmdline),
      new OperatorConfigController(cmdline),
      new OperatorVipConfigController(cmdline),
      new AddressMergeController(),
      new RouteMergeController(),
      new LinkMergeController(),
      new OperatorMergeController(),
      new LinkSpecController(opts.kernel, opts.hold),
      new AddressSpecController(opts.kernel, opts.hold),
      new RouteSpecController(opts.kernel, opts.hold),
      new Dhcp4OperatorController({ kernel: opts.kernel, ...opts.dhcpOptions }),
    );
  }
  return controllers;
}

function defaultLinkDetails(paths: Paths): LinkDetailsReader {
  const read = sysfsLinkInfo(paths.sys);
  return (link) => read(link.name);
}
