// network.HostDNSConfigController: HostDNSConfig `config` from the machine config
// (Talos 1.7): the host DNS cache runs when `.machine.features.hostDNS.enabled`
// (gen config writes it; no config, no cache), listening on 127.0.0.53:53 and, with
// `forwardKubeDNSToHost`, also on the service subnet's 10th address (10.96.0.9 for
// the default 10.96.0.0/12), which it publishes as serviceHostDNSAddress.

import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { HostDNSConfigId, HostDNSConfigType, type HostDNSConfigSpec } from "../../resources/catalog/hostdns.js";
import { NETWORK_NAMESPACE } from "../../resources/catalog/network.js";
import { ipv6Text } from "../../sys/ip-text.js";

export const DEFAULT_HOST_DNS_LISTEN = "127.0.0.53:53";
const DEFAULT_SERVICE_SUBNET = "10.96.0.0/12";

/** The address 9 after the subnet's base address ("10.96.0.0/12" -> "10.96.0.9"; IPv6 too). */
export function serviceHostDnsAddress(subnet: string): string {
  const base = subnet.slice(0, subnet.indexOf("/"));
  if (base.includes(":")) {
    const groups = expandV6(base);
    let carry = 9;
    for (let i = 7; i >= 0 && carry > 0; i--) {
      const sum = groups[i]! + carry;
      groups[i] = sum & 0xffff;
      carry = sum >> 16;
    }
    const bytes = Buffer.alloc(16);
    groups.forEach((g, i) => bytes.writeUInt16BE(g, i * 2));
    return ipv6Text(bytes);
  }
  const n = base.split(".").reduce((acc, o) => acc * 256 + Number(o), 0) + 9;
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
}

function expandV6(addr: string): number[] {
  const [head, tail] = addr.split("::") as [string, string | undefined];
  const h = head ? head.split(":").map((g) => parseInt(g, 16)) : [];
  const t = tail ? tail.split(":").map((g) => parseInt(g, 16)) : [];
  return tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

export class HostDNSConfigController implements Controller {
  readonly name = "network.HostDNSConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: HostDNSConfigType }];

  /** listen: where the cache listens (a sandbox moves it off 127.0.0.53:53). */
  constructor(private readonly listen: string = DEFAULT_HOST_DNS_LISTEN) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    const spec: HostDNSConfigSpec = { enabled: false, listenAddresses: [this.listen] };
    const hostDNS = cfg?.machine?.features?.hostDNS;
    if (cfg?.machine) {
      spec.enabled = hostDNS?.enabled === true;
      if (hostDNS?.resolveMemberNames) spec.resolveMemberNames = true;
      if (hostDNS?.forwardKubeDNSToHost) {
        const address = serviceHostDnsAddress(cfg.cluster?.network?.serviceSubnets?.[0] ?? DEFAULT_SERVICE_SUBNET);
        spec.listenAddresses = [this.listen, address.includes(":") ? `[${address}]:53` : `${address}:53`];
        spec.serviceHostDNSAddress = address;
      }
    }
    ctx.modify<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId, () => spec);
  }
}
