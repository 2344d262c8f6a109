// The `default` layer of hostname, resolvers and time servers, as Talos has them
// when nothing else says otherwise: hostname "talos-" + the default node address
// (dots to dashes, colons dropped), resolvers 1.1.1.1 and 8.8.8.8, time server
// time.cloudflare.com. Written to `network-config` with ids default/<what>, beside
// the cmdline (talos.hostname=, ip=) and configuration (machine.network.hostname,
// nameservers; machine.time.servers) layers.

import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  type ConfigLayer,
  HostnameSpecType,
  type HostnameSpecSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
  ResolverSpecType,
  type ResolverSpecSpec,
  TimeServerSpecType,
  type TimeServerSpecSpec,
} from "../../resources/catalog/network.js";

export const DEFAULT_RESOLVERS = ["1.1.1.1", "8.8.8.8"];
export const DEFAULT_TIME_SERVERS = ["time.cloudflare.com"];

export function defaultHostname(defaultAddress: string): string {
  const slash = defaultAddress.lastIndexOf("/");
  const ip = slash >= 0 ? defaultAddress.slice(0, slash) : defaultAddress;
  return `talos-${ip.replaceAll(":", "").replaceAll(".", "-")}`;
}

export class HostnameConfigController implements Controller {
  readonly name = "network.HostnameConfigController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.default, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: HostnameSpecType, kind: "shared" as const }];

  /** cmdline: `talos.hostname=` from the kernel command line (layer cmdline). */
  constructor(private readonly cmdline?: { hostname: string; domainname: string }) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const def = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.default);
    const keep = new Set<string>();
    if (this.cmdline) {
      const c = this.cmdline;
      ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "cmdline/hostname", () => ({
        hostname: c.hostname,
        domainname: c.domainname,
        layer: "cmdline",
      }));
      keep.add("cmdline/hostname");
    }
    const configured = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine?.network?.hostname;
    if (configured) {
      // machine.network.hostname may carry the domain: "node1.example.org".
      const dot = configured.indexOf(".");
      const [hostname, domainname] = dot > 0 ? [configured.slice(0, dot), configured.slice(dot + 1)] : [configured, ""];
      ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "configuration/hostname", () => ({
        hostname,
        domainname,
        layer: "configuration",
      }));
      keep.add("configuration/hostname");
    }
    if (def && def.spec.addresses.length === 1) {
      const hostname = defaultHostname(def.spec.addresses[0]!);
      ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "default/hostname", () => ({
        hostname,
        domainname: "",
        layer: "default",
      }));
      keep.add("default/hostname");
    }
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, keep);
  }
}

const machineInput = {
  namespace: CONFIG_NAMESPACE,
  type: MachineConfigType,
  id: MachineConfigIds.active,
  kind: "weak" as const,
};

function machineConfig(ctx: ControllerContext) {
  return ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()?.machine;
}

/** Publishes one spec per layer that has servers, and removes the rest. */
function publishLayers<S>(
  ctx: ControllerContext,
  type: string,
  what: string,
  layers: [ConfigLayer, string[]][],
  make: (servers: string[], layer: ConfigLayer) => S,
): void {
  const keep = new Set<string>();
  for (const [layer, servers] of layers) {
    if (servers.length === 0) continue;
    const id = `${layer}/${what}`;
    ctx.modify<S>(NETWORK_CONFIG_NAMESPACE, type, id, () => make(servers, layer));
    keep.add(id);
  }
  ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, type, keep);
}

/** Resolvers: the defaults, `ip=` DNS fields (cmdline) and machine.network.nameservers (configuration). */
export class ResolverConfigController implements Controller {
  readonly name = "network.ResolverConfigController";
  readonly inputs = [machineInput];
  readonly outputs = [{ type: ResolverSpecType, kind: "shared" as const }];

  constructor(private readonly cmdlineServers: readonly string[] = []) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const configured = machineConfig(ctx)?.network?.nameservers ?? [];
    publishLayers<ResolverSpecSpec>(
      ctx,
      ResolverSpecType,
      "resolvers",
      [
        ["default", DEFAULT_RESOLVERS],
        ["cmdline", [...this.cmdlineServers]],
        ["configuration", configured],
      ],
      (dnsServers, layer) => ({ dnsServers, layer }),
    );
  }
}

/** Time servers: the default, `ip=` NTP field (cmdline) and machine.time.servers (configuration). */
export class TimeServerConfigController implements Controller {
  readonly name = "network.TimeServerConfigController";
  readonly inputs = [machineInput];
  readonly outputs = [{ type: TimeServerSpecType, kind: "shared" as const }];

  constructor(private readonly cmdlineServers: readonly string[] = []) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const configured = machineConfig(ctx)?.time?.servers ?? [];
    publishLayers<TimeServerSpecSpec>(
      ctx,
      TimeServerSpecType,
      "timeservers",
      [
        ["default", DEFAULT_TIME_SERVERS],
        ["cmdline", [...this.cmdlineServers]],
        ["configuration", configured],
      ],
      (timeServers, layer) => ({ timeServers, layer }),
    );
  }
}
