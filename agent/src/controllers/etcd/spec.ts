// EtcdSpec `etcd`: the member name (hostname), the addresses etcd advertises and listens on, its
// image and extra args, from EtcdConfig and the node's addresses, as Talos's etcd.SpecController.
import { prefixContains } from "../../network/ip-prefix.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  ETCD_NAMESPACE,
  EtcdConfigId,
  EtcdConfigType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdConfigSpec,
  type EtcdSpecSpec,
} from "../../resources/catalog/etcd.js";
import {
  filteredNodeAddressId,
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NodeAddressFilterIds,
  NodeAddressIds,
  NodeAddressType,
  type HostnameStatusSpec,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";

const isV6 = (ip: string) => ip.includes(":");
const asPrefix = (cidr: string) => (cidr.includes("/") ? cidr : `${cidr}/${isV6(cidr) ? 128 : 32}`);

/**
 * siderolabs/net FilterIPs: the CIDRs in order, each including the addresses it holds (once, in
 * address order) or, written `!x`, removing them from what is included so far. A bare IP is its
 * own /32 or /128.
 */
export function filterIPs(addresses: readonly string[], cidrs: readonly string[]): string[] {
  const result: string[] = [];
  for (const cidr of cidrs) {
    const exclude = cidr.startsWith("!");
    const prefix = asPrefix(exclude ? cidr.slice(1) : cidr);
    for (const ip of addresses) {
      if (!prefixContains(prefix, ip)) continue;
      const at = result.indexOf(ip);
      if (!exclude && at < 0) result.push(ip);
      if (exclude && at >= 0) result.splice(at, 1);
    }
  }
  return result;
}

export interface EtcdAddresses {
  advertised: string[];
  listenPeer: string[];
  listenClient: string[];
}

/**
 * Talos's choice of etcd's addresses: without advertisedSubnets, the first routed address (any
 * but the VIPs); with them, every current address they hold. Without listenSubnets, etcd
 * listens on the wildcard (`::` once the node has an IPv6 address); with them, peers on the
 * routed addresses they hold and clients on loopback too. Undefined while there is nothing to use.
 */
export function etcdAddresses(
  config: EtcdConfigSpec,
  routed: readonly string[],
  current: readonly string[],
): EtcdAddresses | undefined {
  if (routed.length === 0) return undefined;
  const validAdvertise = config.advertiseValidSubnets.length > 0 ? config.advertiseValidSubnets : ["0.0.0.0/0", "::/0"];
  const advertiseCIDRs = [...validAdvertise, ...config.advertiseExcludeSubnets.map((c) => `!${c}`)];
  const listenCIDRs = [...config.listenValidSubnets, ...config.listenExcludeSubnets.map((c) => `!${c}`)];
  const v6 = routed.some(isV6);
  const wildcard = v6 ? "::" : "0.0.0.0";
  const loopback = v6 ? "::1" : "127.0.0.1";
  const advertised =
    config.advertiseValidSubnets.length === 0
      ? filterIPs(routed, advertiseCIDRs).slice(0, 1)
      : filterIPs(current, advertiseCIDRs);
  const listenPeer = listenCIDRs.length > 0 ? filterIPs(routed, listenCIDRs) : [wildcard];
  const listenClient = listenCIDRs.length > 0 ? [loopback, ...listenPeer] : [wildcard];
  if (advertised.length === 0 || listenPeer.length === 0) return undefined;
  return { advertised, listenPeer, listenClient };
}

const routedNoK8s = filteredNodeAddressId(NodeAddressIds.routed, NodeAddressFilterIds.noK8s);
const currentNoK8s = filteredNodeAddressId(NodeAddressIds.current, NodeAddressFilterIds.noK8s);
const ips = (spec: NodeAddressSpec) => spec.addresses.map((p) => p.replace(/\/\d+$/, ""));

export class EtcdSpecController implements Controller {
  readonly name = "etcd.SpecController";
  readonly inputs = [
    { namespace: ETCD_NAMESPACE, type: EtcdConfigType, id: EtcdConfigId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, id: HostnameStatusId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: EtcdSpecType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const config = ctx.get<EtcdConfigSpec>(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId)?.spec;
    if (!config) {
      // Talos leaves the spec as it was; without a config (a worker) there is none to begin with.
      ctx.destroyOthers(ETCD_NAMESPACE, EtcdSpecType, new Set());
      return;
    }
    const host = ctx.get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec;
    const routed = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, routedNoK8s)?.spec;
    const current = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, currentNoK8s)?.spec;
    if (!host || !routed || !current) return;
    const addrs = etcdAddresses(config, ips(routed), ips(current));
    if (!addrs) return;
    ctx.modify<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, () => ({
      name: host.hostname,
      advertisedAddresses: addrs.advertised,
      listenPeerAddresses: addrs.listenPeer,
      listenClientAddresses: addrs.listenClient,
      image: config.image,
      extraArgs: config.extraArgs,
    }));
  }
}
