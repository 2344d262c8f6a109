// network.NodeAddressController: the node's addresses as Talos reports them —
// `default` (one address, sticky while it stays on the node), `current` (on links
// that are up), `routed` (current minus SideroLink) and `accumulative` (every address
// ever seen). Only global/site-scope, non-loopback, non-link-local, non-multicast.
// Each NodeAddressFilter `<f>` adds `current-<f>`, `routed-<f>` and
// `accumulative-<f>` narrowed by its subnets (Talos 1.7 has no filtered default).

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { ipBytes } from "../../resources/codec.js";
import { prefixContains } from "../../network/ip-prefix.js";
import {
  AddressStatusType,
  type AddressStatusSpec,
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_NAMESPACE,
  NodeAddressFilterType,
  type NodeAddressFilterSpec,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
  filteredNodeAddressId,
} from "../../resources/catalog/network.js";
import type { Resource } from "../../resources/resource.js";
import { ADDRESS_STATUS_CONTROLLER as addressStatusOwner } from "./address-status.js";
import { isPhysical } from "./link-status.js";

/** netip.Addr ordering: IPv4 before IPv6, then bytewise. */
export function compareIp(a: string, b: string): number {
  const x = ipBytes(a);
  const y = ipBytes(b);
  return x.length !== y.length ? x.length - y.length : Buffer.compare(x, y);
}

const ipOf = (prefix: string) => prefix.slice(0, prefix.lastIndexOf("/"));

function usable(spec: AddressStatusSpec): boolean {
  if (spec.scope !== "global" && spec.scope !== "site") return false;
  const b = ipBytes(ipOf(spec.address));
  if (b.length === 4) return b[0] !== 127 && !(b[0]! >= 224 && b[0]! <= 239) && !(b[0] === 169 && b[1] === 254);
  const loopback = b.every((v, i) => v === (i === 15 ? 1 : 0));
  return !loopback && b[0] !== 0xff && !(b[0] === 0xfe && (b[1]! & 0xc0) === 0x80);
}

function isSideroLink(ip: string): boolean {
  const b = ipBytes(ip);
  return b.length === 16 && b.subarray(0, 8).equals(Buffer.from([0xfd, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x03]));
}

function sortUnique(prefixes: string[]): string[] {
  const sorted = [...prefixes].sort((a, b) => compareIp(ipOf(a), ipOf(b)) || a.localeCompare(b));
  return sorted.filter((p, i) => i === 0 || p !== sorted[i - 1]);
}

/** Adds each address (by IP) not yet in `recorded`, keeping IP order; what is recorded stays. */
export function mergeAccumulative(recorded: readonly string[], seen: readonly string[]): string[] {
  const out = [...recorded];
  for (const p of seen) {
    const ip = ipOf(p);
    const at = out.findIndex((q) => compareIp(ipOf(q), ip) >= 0);
    if (at >= 0 && compareIp(ipOf(out[at]!), ip) === 0) continue;
    out.splice(at < 0 ? out.length : at, 0, p);
  }
  return out;
}

/** The addresses a filter lets through, in order (Talos's filterIPs). */
export function filterAddresses(prefixes: readonly string[], filter: NodeAddressFilterSpec): string[] {
  return prefixes.filter((p) => {
    const ip = ipOf(p);
    if (filter.includeSubnets.length > 0 && !filter.includeSubnets.some((n) => prefixContains(n, ip))) return false;
    return !filter.excludeSubnets.some((n) => prefixContains(n, ip));
  });
}

export interface NodeAddressSets {
  default?: string;
  current: string[];
  routed: string[];
  accumulative: string[];
}

export function computeNodeAddresses(
  links: Resource<LinkStatusSpec>[],
  addresses: Resource<AddressStatusSpec>[],
): NodeAddressSets {
  const up = new Set<number>();
  for (const l of links) {
    const s = l.spec;
    const operUp = s.operationalState === "up" || s.operationalState === "unknown";
    if (operUp && (!isPhysical(s) || s.linkState)) up.add(s.index);
  }
  let def: { prefix: string; link: string } | undefined;
  const current: string[] = [];
  const routed: string[] = [];
  const accumulative: string[] = [];
  for (const r of addresses) {
    const s = r.spec;
    if (!usable(s)) continue;
    if (r.metadata.owner === addressStatusOwner) {
      if (
        !def ||
        s.linkName < def.link ||
        (s.linkName === def.link && compareIp(ipOf(s.address), ipOf(def.prefix)) < 0)
      ) {
        def = { prefix: s.address, link: s.linkName };
      }
    }
    // A cloud's external addresses are on no link: always up, never routed (as Talos).
    const external = s.linkName === "external" && r.metadata.owner !== addressStatusOwner;
    if (up.has(s.linkIndex) || external) {
      current.push(s.address);
      if (!external && !isSideroLink(ipOf(s.address))) routed.push(s.address);
    }
    accumulative.push(s.address);
  }
  const out: NodeAddressSets = { current: sortUnique(current), routed: sortUnique(routed), accumulative };
  if (def) out.default = def.prefix;
  return out;
}

export class NodeAddressController implements Controller {
  readonly name = "network.NodeAddressController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: AddressStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressFilterType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeAddressType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const sets = computeNodeAddresses(
      ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType),
      ctx.list<AddressStatusSpec>(NETWORK_NAMESPACE, AddressStatusType),
    );
    const keep = new Set<string>();
    if (sets.default) {
      const chosen = sets.default;
      keep.add(NodeAddressIds.default);
      ctx.modify<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.default, (cur) => {
        // Sticky: keep the recorded default while it is still on the node.
        if (cur && cur.addresses.length > 0 && sets.current.includes(cur.addresses[0]!)) return cur;
        return { addresses: [chosen] };
      });
    }
    const publish = (suffix: (kind: string) => string, narrow: (prefixes: string[]) => string[]) => {
      const ids = {
        current: suffix(NodeAddressIds.current),
        routed: suffix(NodeAddressIds.routed),
        accumulative: suffix(NodeAddressIds.accumulative),
      };
      ctx.modify<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, ids.current, () => ({
        addresses: narrow(sets.current),
      }));
      ctx.modify<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, ids.routed, () => ({
        addresses: narrow(sets.routed),
      }));
      ctx.modify<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, ids.accumulative, (cur) => ({
        addresses: mergeAccumulative(cur?.addresses ?? [], narrow(sets.accumulative)),
      }));
      for (const id of Object.values(ids)) keep.add(id);
    };
    publish(
      (kind) => kind,
      (prefixes) => prefixes,
    );
    for (const filter of ctx.list<NodeAddressFilterSpec>(NETWORK_NAMESPACE, NodeAddressFilterType)) {
      publish(
        (kind) => filteredNodeAddressId(kind, filter.metadata.id),
        (prefixes) => filterAddresses(prefixes, filter.spec),
      );
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, NodeAddressType, keep);
  }
}
