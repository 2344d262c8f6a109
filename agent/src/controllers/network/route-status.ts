// network.RouteStatusController: one RouteStatus per kernel route, every table
// (id as Talos builds it, see routeId).

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  NETWORK_NAMESPACE,
  RouteStatusType,
  type RouteStatusSpec,
  netNames,
  routeId,
} from "../../resources/catalog/network.js";
import type { KernelRoute, NetKernel } from "../../sys/net.js";
import { KernelTrigger } from "./kernel-watch.js";

export function routeStatusSpec(r: KernelRoute): RouteStatusSpec {
  const spec: RouteStatusSpec = {
    family: netNames.family(r.family),
    dst: r.dstLen === 0 && (r.dst === "" || r.dst === "0.0.0.0" || r.dst === "::") ? "" : `${r.dst}/${r.dstLen}`,
    src: r.src,
    gateway: r.gateway,
    table: netNames.table(r.table),
    priority: r.priority,
    scope: netNames.scope(r.scope),
    type: netNames.routeType(r.type),
    flags: netNames.routeFlags(r.flags),
    protocol: netNames.protocol(r.protocol),
  };
  const ordered: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (k === "table") {
      if (r.outLinkIndex) ordered.outLinkIndex = r.outLinkIndex;
      if (r.outLinkName) ordered.outLinkName = r.outLinkName;
    }
    ordered[k] = v;
  }
  if (r.mtu) ordered.mtu = r.mtu;
  return ordered as unknown as RouteStatusSpec;
}

export class RouteStatusController implements Controller {
  readonly name = "network.RouteStatusController";
  readonly inputs = [];
  readonly outputs = [{ type: RouteStatusType }];
  private readonly trigger: KernelTrigger;

  constructor(private readonly kernel: NetKernel) {
    this.trigger = new KernelTrigger(kernel, ["route", "link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.trigger.arm(ctx);
    const keep = new Set<string>();
    for (const r of await this.kernel.listRoutes()) {
      const spec = routeStatusSpec(r);
      const id = routeId(spec);
      // Two kernel routes can share an id (it omits e.g. the link for IPv4); the first wins.
      if (keep.has(id)) continue;
      ctx.modify<RouteStatusSpec>(NETWORK_NAMESPACE, RouteStatusType, id, () => spec);
      keep.add(id);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, RouteStatusType, keep);
  }
}
