// k8s.NodeIPController: NodeIP `kubelet`, the kubelet's --node-ip: the node's routed
// addresses outside the pod and service subnets (NodeAddress `routed-no-k8s`), filtered
// by NodeIPConfig as siderolabs/net's FilterIPs does (subnet by subnet, in the order
// given; an excluded subnet removes what an earlier one added), then at most one IPv4
// and one IPv6 address, the first of each.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  NodeIPConfigType,
  NodeIPType,
  type NodeIPConfigSpec,
  type NodeIPSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import {
  filteredNodeAddressId,
  NETWORK_NAMESPACE,
  NodeAddressFilterIds,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";
import { prefixContains } from "../../network/ip-prefix.js";

export const routedNoK8sId = filteredNodeAddressId(NodeAddressIds.routed, NodeAddressFilterIds.noK8s);

const asPrefix = (subnet: string) => (subnet.includes("/") ? subnet : `${subnet}/${subnet.includes(":") ? 128 : 32}`);

/** FilterIPs: each subnet in turn adds the addresses it holds (no duplicates), or, prefixed `!`, removes them. */
export function filterIPs(ips: readonly string[], subnets: readonly string[]): string[] {
  const out: string[] = [];
  for (const subnet of subnets) {
    const negative = subnet.startsWith("!");
    const prefix = asPrefix(negative ? subnet.slice(1) : subnet);
    for (const ip of ips) {
      if (!prefixContains(prefix, ip)) continue;
      const at = out.indexOf(ip);
      if (!negative && at < 0) out.push(ip);
      if (negative && at >= 0) out.splice(at, 1);
    }
  }
  return out;
}

/** The first IPv4 and the first IPv6 address, in the order found. */
export function onePerFamily(ips: readonly string[]): { picked: string[]; skipped: string[] } {
  const picked: string[] = [];
  const skipped: string[] = [];
  for (const ip of ips) {
    const v6 = ip.includes(":");
    if (picked.some((p) => p.includes(":") === v6)) skipped.push(ip);
    else picked.push(ip);
  }
  return { picked, skipped };
}

export class NodeIPController implements Controller {
  readonly name = "k8s.NodeIPController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: NodeIPConfigType, id: KubeletId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: routedNoK8sId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeIPType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<NodeIPConfigSpec>(K8S_NAMESPACE, NodeIPConfigType, KubeletId)?.spec;
    const routed = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, routedNoK8sId)?.spec;
    if (!cfg || !routed) return;
    const ips = routed.addresses.map((p) => p.slice(0, p.lastIndexOf("/") < 0 ? p.length : p.lastIndexOf("/")));
    const found = filterIPs(ips, [...cfg.validSubnets, ...cfg.excludeSubnets.map((s) => `!${s}`)]);
    if (found.length === 0) {
      ctx.log.warn(
        "no suitable node IP found, please make sure .machine.kubelet.nodeIP filters and pod/service subnets are set up correctly",
      );
      return;
    }
    const { picked, skipped } = onePerFamily(found);
    for (const address of skipped) {
      ctx.log.warn("node IP skipped, please use .machine.kubelet.nodeIP to provide explicit subnet for the node IP", {
        address,
      });
    }
    ctx.modify<NodeIPSpec>(K8S_NAMESPACE, NodeIPType, KubeletId, () => ({ addresses: picked }));
  }
}
