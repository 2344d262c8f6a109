// network.AddressMergeController, RouteMergeController, LinkMergeController,
// OperatorMergeController: the
// per-layer specs of `network-config` merged into `network` (plain ids). Addresses
// and routes: one per id, the highest layer wins. Links: merged field by field,
// higher layers overriding what they set (Talos's LinkSpec.Merge).

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AddressSpecType,
  type AddressSpecSpec,
  type ConfigLayer,
  LinkSpecType,
  type LinkSpecSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  OperatorSpecType,
  type OperatorSpecSpec,
  RouteSpecType,
  type RouteSpecSpec,
  layerRank,
} from "../../resources/catalog/network.js";
import { addressSpecKey, routeSpecKey } from "./config-layers.js";

function mergeByLayer<S extends { layer: ConfigLayer }>(
  ctx: ControllerContext,
  type: string,
  key: (s: S) => string,
  combine: (lower: S, higher: S) => S,
): void {
  const merged = new Map<string, S>();
  const specs = ctx
    .list<S>(NETWORK_CONFIG_NAMESPACE, type)
    .sort((a, b) => layerRank(a.spec.layer) - layerRank(b.spec.layer) || a.metadata.id.localeCompare(b.metadata.id));
  for (const r of specs) {
    const k = key(r.spec);
    const prev = merged.get(k);
    merged.set(k, prev ? combine(prev, r.spec) : r.spec);
  }
  for (const [id, spec] of merged) ctx.modify<S>(NETWORK_NAMESPACE, type, id, () => spec);
  ctx.destroyOthers(NETWORK_NAMESPACE, type, new Set(merged.keys()));
}

export class AddressMergeController implements Controller {
  readonly name = "network.AddressMergeController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: AddressSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: AddressSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    mergeByLayer<AddressSpecSpec>(ctx, AddressSpecType, addressSpecKey, (_, higher) => higher);
  }
}

export class RouteMergeController implements Controller {
  readonly name = "network.RouteMergeController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: RouteSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: RouteSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    mergeByLayer<RouteSpecSpec>(ctx, RouteSpecType, routeSpecKey, (_, higher) => higher);
  }
}

/** Talos's LinkSpec.Merge: the higher layer's set fields (up, non-zero MTU, logical settings) win. */
export function mergeLinkSpecs(lower: LinkSpecSpec, higher: LinkSpecSpec): LinkSpecSpec {
  const out: LinkSpecSpec = { ...lower, layer: higher.layer };
  if (higher.up) out.up = true;
  if (higher.mtu) out.mtu = higher.mtu;
  if (higher.logical) {
    out.logical = true;
    out.kind = higher.kind;
    out.type = higher.type;
  }
  for (const k of [
    "parentName",
    "masterName",
    "slaveIndex",
    "bridgeSlave",
    "vlan",
    "bondMaster",
    "bridgeMaster",
  ] as const) {
    // Copying one key from a spec to a spec of the same type; TS cannot relate higher[k] to out[k] for a union k.
    if (higher[k] !== undefined) (out as unknown as Record<string, unknown>)[k] = higher[k];
  }
  return out;
}

export class LinkMergeController implements Controller {
  readonly name = "network.LinkMergeController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: LinkSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: LinkSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    mergeByLayer<LinkSpecSpec>(ctx, LinkSpecType, (s) => s.name, mergeLinkSpecs);
  }
}

export class OperatorMergeController implements Controller {
  readonly name = "network.OperatorMergeController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: OperatorSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: OperatorSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    mergeByLayer<OperatorSpecSpec>(
      ctx,
      OperatorSpecType,
      (s) => `${s.operator}/${s.linkName}`,
      (_, higher) => higher,
    );
  }
}
