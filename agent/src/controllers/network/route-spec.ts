// network.RouteSpecController: makes the kernel hold the merged RouteSpecs, as the
// address controller does for addresses: specified routes missing from the kernel are
// added (again), routes it added whose spec went are removed. A route whose gateway
// is not reachable yet is retried on the next kernel change.

import { describeError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { NETWORK_NAMESPACE, RouteSpecType, type RouteSpecSpec, netValues } from "../../resources/catalog/network.js";
import type { KernelRoute, NetKernel, RouteRequest } from "../../sys/net.js";
import { KernelTrigger } from "./kernel-watch.js";
import type { NetworkChangeHold } from "./change-hold.js";

export function routeRequest(s: RouteSpecSpec): RouteRequest {
  const family = s.family === "inet6" ? 6 : 4;
  const [dst, len] = s.dst ? (s.dst.split("/") as [string, string]) : ["", "0"];
  const req: RouteRequest = {
    family,
    dst,
    dstLen: Number(len),
    table: netValues.table(s.table),
    priority: s.priority ?? 0,
    scope: netValues.scope(s.scope),
    type: netValues.routeType(s.type),
    protocol: netValues.protocol(s.protocol),
  };
  if (s.gateway) req.gateway = s.gateway;
  if (s.src) req.src = s.src;
  if (s.outLinkName) req.outLinkName = s.outLinkName;
  if (s.mtu) req.mtu = s.mtu;
  return req;
}

const key = (r: {
  family: number;
  table?: number;
  dst: string;
  dstLen: number;
  gateway?: string;
  priority?: number;
  outLinkName?: string;
}) => `${r.table ?? 254}/${r.family}/${r.dst}/${r.dstLen}/${r.gateway ?? ""}/${r.priority ?? 0}/${r.outLinkName ?? ""}`;
const kernelKey = (r: KernelRoute) => key({ ...r, gateway: r.gateway });

export class RouteSpecController implements Controller {
  readonly name = "network.RouteSpecController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: RouteSpecType, kind: "weak" as const }];
  readonly outputs = [];
  private readonly trigger: KernelTrigger;
  private readonly applied = new Map<string, RouteRequest>();

  constructor(
    private readonly kernel: NetKernel,
    private readonly hold?: NetworkChangeHold,
  ) {
    this.trigger = new KernelTrigger(kernel, ["route", "address", "link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.trigger.arm(ctx);
    await this.hold?.released();
    const links = new Set((await this.kernel.listLinks()).map((l) => l.name));
    const present = new Set((await this.kernel.listRoutes()).map(kernelKey));
    const wanted = new Map<string, RouteRequest>();
    for (const r of ctx.list<RouteSpecSpec>(NETWORK_NAMESPACE, RouteSpecType)) {
      const req = routeRequest(r.spec);
      wanted.set(key(req), req);
    }
    for (const [k, req] of this.applied) {
      if (wanted.has(k)) continue;
      if (present.has(k)) {
        ctx.log.info("removing route", { route: k });
        await this.kernel.removeRoute(req);
      }
      this.applied.delete(k);
    }
    // Link routes first: gateways are reached through them.
    const ordered = [...wanted].sort(([, a], [, b]) => Number(Boolean(a.gateway)) - Number(Boolean(b.gateway)));
    for (const [k, req] of ordered) {
      if (req.outLinkName && !links.has(req.outLinkName)) continue;
      if (!present.has(k)) {
        try {
          await this.kernel.addRoute(req);
          ctx.log.info("added route", { route: k });
        } catch (err) {
          // One unreachable gateway must not hold back the other routes; a kernel change retries it.
          ctx.log.warn("route not applied yet", { route: k, error: describeError(err) });
          continue;
        }
      }
      this.applied.set(k, req);
    }
  }
}
