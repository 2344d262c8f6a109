// What a network operator (DHCPv4 today; DHCPv6, VIP later) wants on the node, and
// the applier that makes the kernel match it. In the full networkd these become
// AddressSpec/RouteSpec/LinkSpec resources at the `operator` layer applied by the
// spec controllers; until then OperatorKernelApplier applies them directly and
// removes whatever an operator no longer asks for.

import { describeError } from "../errors.js";
import { logger } from "../log.js";
import type { AddressRequest, NetKernel, RouteRequest } from "../sys/net.js";

export interface OperatorOutput {
  addresses: AddressRequest[];
  routes: RouteRequest[];
  mtu?: number;
  dnsServers: string[];
  timeServers: string[];
  hostname?: { hostname: string; domainname: string };
}

const log = logger("network-operator");

const addrKey = (a: AddressRequest) => `${a.linkName}/${a.address}/${a.prefixLen}`;
const routeKey = (r: RouteRequest) => `${r.table ?? 254}/${r.family}/${r.dst}/${r.dstLen}/${r.gateway ?? ""}/${r.outLinkName ?? ""}/${r.priority ?? 0}`;

export class OperatorKernelApplier {
  private readonly applied = new Map<string, { addresses: AddressRequest[]; routes: RouteRequest[] }>();

  constructor(private readonly kernel: NetKernel) {}

  /** Makes the kernel hold exactly `out`'s addresses, routes and MTU for operator `id` (e.g. "dhcp4/eth0"). */
  async apply(id: string, linkName: string, out: OperatorOutput): Promise<void> {
    const prev = this.applied.get(id) ?? { addresses: [], routes: [] };
    const wantAddr = new Set(out.addresses.map(addrKey));
    const wantRoute = new Set(out.routes.map(routeKey));
    for (const r of prev.routes) if (!wantRoute.has(routeKey(r))) await this.kernel.removeRoute(r);
    for (const a of prev.addresses) if (!wantAddr.has(addrKey(a))) await this.kernel.removeAddress(a);
    if (out.mtu !== undefined) await this.kernel.setLinkMtu(linkName, out.mtu);
    for (const a of out.addresses) await this.kernel.addAddress(a);
    // Interface routes first: gateways outside the subnet are reached through them.
    const ordered = [...out.routes].sort((x, y) => Number(Boolean(x.gateway)) - Number(Boolean(y.gateway)));
    for (const r of ordered) {
      try {
        await this.kernel.addRoute(r);
      } catch (err) {
        // One bad route (e.g. unreachable gateway) must not block the others.
        log.warn("route not applied", { error: describeError(err), operator: id, dst: `${r.dst || "default"}/${r.dstLen}` });
      }
    }
    this.applied.set(id, { addresses: out.addresses, routes: out.routes });
  }

  /** Removes everything operator `id` applied. */
  async remove(id: string): Promise<void> {
    const prev = this.applied.get(id);
    if (!prev) return;
    this.applied.delete(id);
    for (const r of prev.routes) await this.kernel.removeRoute(r).catch((err) => log.warn("route not removed", { error: describeError(err), operator: id }));
    for (const a of prev.addresses) await this.kernel.removeAddress(a).catch((err) => log.warn("address not removed", { error: describeError(err), operator: id }));
  }
}
