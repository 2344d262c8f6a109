// What a DHCPv4 lease asks of the node, in the shape Talos's DHCP operator produces:
// one permanent global address, routes with the operator's metric (classless static
// routes replace the router option, RFC 3442), the MTU, and resolver, time server and
// hostname contributions at the `operator` layer.

import { ipv4Network, RTN_UNICAST, RTPROT_BOOT, SCOPE_LINK, SCOPE_UNIVERSE, TABLE_MAIN } from "../../sys/net.js";
import type { Lease } from "./client.js";
import type { OperatorOutput } from "../operator-output.js";

/** Talos's default route metric for DHCP routes. */
export const DEFAULT_ROUTE_METRIC = 1024;

export function leaseToOutput(linkName: string, lease: Lease, opts: { routeMetric?: number } = {}): OperatorOutput {
  const metric = opts.routeMetric ?? DEFAULT_ROUTE_METRIC;
  const net = ipv4Network(lease.address, lease.prefixLen);
  const inSubnet = (ip: string) => ipv4Network(ip, lease.prefixLen) === net;
  const route = (dst: string, dstLen: number, gateway: string, scope: number) => ({
    family: 4 as const,
    dst,
    dstLen,
    gateway,
    src: lease.address,
    outLinkName: linkName,
    table: TABLE_MAIN,
    priority: metric,
    scope,
    type: RTN_UNICAST,
    protocol: RTPROT_BOOT,
  });

  const routes = [];
  if (lease.classlessRoutes.length > 0) {
    for (const r of lease.classlessRoutes) {
      // Gateway 0.0.0.0 means "directly on the link".
      const gw = r.gateway === "0.0.0.0" ? "" : r.gateway;
      routes.push(route(r.dst, r.dstLen, gw, gw === "" ? SCOPE_LINK : SCOPE_UNIVERSE));
    }
  } else {
    for (const gw of lease.routers) {
      routes.push(route("", 0, gw, SCOPE_UNIVERSE));
      // A gateway outside the subnet needs an interface route to be reachable.
      if (!inSubnet(gw)) routes.push(route(gw, 32, "", SCOPE_LINK));
    }
  }

  const out: OperatorOutput = {
    addresses: [{ linkName, address: lease.address, prefixLen: lease.prefixLen, broadcast: lease.broadcast ?? "+" }],
    routes,
    dnsServers: lease.dnsServers,
    timeServers: lease.ntpServers,
  };
  if (lease.mtu !== undefined && lease.mtu >= 68) out.mtu = lease.mtu;
  if (lease.hostname) {
    // Option 12 may be a FQDN; option 15, when present, sets the domain.
    const dot = lease.hostname.indexOf(".");
    const host = dot > 0 ? lease.hostname.slice(0, dot) : lease.hostname;
    const domain = lease.domainName || (dot > 0 ? lease.hostname.slice(dot + 1) : "");
    out.hostname = { hostname: host, domainname: domain };
  }
  return out;
}
