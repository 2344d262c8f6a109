// What a network operator (DHCPv4 today) wants on the node, and the operator-layer
// specs it becomes (ids `<operator>/<link>/<id>` in `network-config`, as Talos's
// OperatorSpecController writes them); the spec controllers apply them.

import {
  type AddressSpecSpec,
  type LinkSpecSpec,
  type RouteSpecSpec,
  addressId,
  netNames,
  routeId,
} from "../resources/catalog/network.js";
import type { AddressRequest, RouteRequest } from "../sys/net.js";

export interface OperatorOutput {
  addresses: AddressRequest[];
  routes: RouteRequest[];
  mtu?: number;
  dnsServers: string[];
  timeServers: string[];
  hostname?: { hostname: string; domainname: string };
}

export interface OperatorSpecs {
  addresses: [string, AddressSpecSpec][];
  routes: [string, RouteSpecSpec][];
  links: [string, LinkSpecSpec][];
}

/** The operator-layer specs of `out`, ids prefixed with `prefix` (e.g. "dhcp4/eth0"). */
export function operatorSpecs(prefix: string, linkName: string, out: OperatorOutput): OperatorSpecs {
  const addresses = out.addresses.map((a): [string, AddressSpecSpec] => {
    const spec: AddressSpecSpec = {
      address: `${a.address}/${a.prefixLen}`,
      linkName: a.linkName,
      family: a.address.includes(":") ? "inet6" : "inet4",
      scope: netNames.scope(a.scope ?? 0),
      flags: "permanent",
      layer: "operator",
    };
    return [`${prefix}/${addressId(a.linkName, spec.address)}`, spec];
  });
  const routes = out.routes.map((r): [string, RouteSpecSpec] => {
    const spec: RouteSpecSpec = {
      family: netNames.family(r.family),
      dst: r.dstLen === 0 ? "" : `${r.dst}/${r.dstLen}`,
      src: r.src ?? "",
      gateway: r.gateway ?? "",
      outLinkName: r.outLinkName ?? linkName,
      table: netNames.table(r.table ?? 254),
      priority: r.priority ?? 0,
      scope: netNames.scope(r.scope ?? 0),
      type: netNames.routeType(r.type ?? 1),
      flags: "",
      protocol: netNames.protocol(r.protocol ?? 3),
      layer: "operator",
    };
    if (r.mtu) spec.mtu = r.mtu;
    const id = routeId({
      table: spec.table,
      family: spec.family,
      dst: spec.dst,
      gateway: spec.gateway,
      priority: spec.priority ?? 0,
      outLinkName: spec.outLinkName ?? "",
    });
    return [`${prefix}/${id}`, spec];
  });
  const links: [string, LinkSpecSpec][] = [];
  if (out.mtu !== undefined) {
    links.push([
      `${prefix}/${linkName}`,
      { name: linkName, logical: false, up: true, mtu: out.mtu, kind: "", type: "ether", layer: "operator" },
    ]);
  }
  return { addresses, routes, links };
}
