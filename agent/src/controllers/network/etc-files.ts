// network.EtcFileController: /etc/resolv.conf and /etc/hosts rendered from the merged
// statuses as Talos renders them (at most three nameservers; the search domain
// unless machine.network.disableSearchDomain; hosts with the node's default address
// and name, the IPv6 names and machine.network.extraHostEntries), rewritten when they
// change. The files are written through an injected writer (under Paths.etc).

import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  type HostnameStatusSpec,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
  ResolverStatusId,
  ResolverStatusType,
  type ResolverStatusSpec,
} from "../../resources/catalog/network.js";
import { HostDNSConfigId, HostDNSConfigType, type HostDNSConfigSpec } from "../../resources/catalog/hostdns.js";

export function renderResolvConf(dnsServers: readonly string[], searchDomain: string): string {
  const lines = dnsServers.slice(0, 3).map((s) => `nameserver ${s}`);
  if (searchDomain) lines.push("", `search ${searchDomain}`);
  return lines.join("\n") + "\n";
}

/** Go's tabwriter with padding 1: the first column padded to its widest cell plus one space. */
function columns(rows: [string, string][]): string {
  const width = Math.max(...rows.map(([a]) => a.length)) + 1;
  return rows.map(([a, b]) => `${a.padEnd(width)}${b}\n`).join("");
}

export function renderHosts(
  address: string,
  hostname: string,
  domainname: string,
  extra: readonly { ip?: string; aliases?: string[] }[],
): string {
  const fqdn = domainname ? `${hostname}.${domainname}` : hostname;
  return columns([
    ["127.0.0.1", "localhost"],
    [address, fqdn === hostname ? fqdn : `${fqdn} ${hostname}`],
    ["::1", "localhost ip6-localhost ip6-loopback"],
    ["ff02::1", "ip6-allnodes"],
    ["ff02::2", "ip6-allrouters"],
    ...extra.map((e): [string, string] => [e.ip ?? "", (e.aliases ?? []).join(" ")]),
  ]);
}

/** The node's /etc files, and the resolv.conf the kubelet gives pods (Talos's /system/resolved/resolv.conf). */
export type EtcFileName = "resolv.conf" | "hosts" | "pod-resolv.conf";
export type EtcFileWriter = (name: EtcFileName, text: string) => Promise<void>;

export class EtcFileController implements Controller {
  readonly name = "network.EtcFileController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: ResolverStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.default, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostDNSConfigType, id: HostDNSConfigId, kind: "weak" as const },
  ];
  readonly outputs = [];
  private readonly written = new Map<string, string>();

  constructor(private readonly write: EtcFileWriter) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const network = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()
      ?.machine?.network;
    const host = ctx.get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec;
    const resolvers = ctx.get<ResolverStatusSpec>(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec;
    const address = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.default)?.spec
      .addresses[0];
    const search = network?.disableSearchDomain ? "" : (host?.domainname ?? "");
    if (resolvers)
      await this.put("resolv.conf", renderResolvConf(hostDnsNameserver(ctx) ?? resolvers.dnsServers, search));
    // Pods resolve through the host DNS cache's service address when it has one, else the node's resolvers.
    const hostDns = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
    if (resolvers && hostDns)
      await this.put(
        "pod-resolv.conf",
        renderResolvConf(
          hostDns.serviceHostDNSAddress ? [hostDns.serviceHostDNSAddress] : resolvers.dnsServers,
          search,
        ),
      );
    // Talos writes hosts once the node has a name and a default address.
    if (host && address)
      await this.put(
        "hosts",
        renderHosts(
          address.slice(0, address.lastIndexOf("/")),
          host.hostname,
          host.domainname,
          network?.extraHostEntries ?? [],
        ),
      );
  }

  private async put(name: EtcFileName, text: string): Promise<void> {
    if (this.written.get(name) === text) return;
    await this.write(name, text);
    this.written.set(name, text);
  }
}

/** With the host DNS cache on (listening on port 53), resolv.conf names it alone (Talos: 127.0.0.53). */
function hostDnsNameserver(ctx: ControllerContext): string[] | undefined {
  const cfg = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
  const first = cfg?.enabled ? /^([\d.]+):53$/.exec(cfg.listenAddresses?.[0] ?? "") : null;
  return first ? [first[1]!] : undefined;
}
