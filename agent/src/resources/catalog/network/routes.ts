// RouteStatuses and RouteSpecs: routes, reported and asked for.

import { netIP, netIPPrefix } from "../../codec.js";
import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

// ---------------------------------------------------------------------------
// IDs (as Talos builds them).

/** `[<table>/]<family>/[<link>/ for inet6]<gateway>/<dst>/<priority>` ("main" table left out). */
export function routeId(
  spec: Pick<RouteStatusSpec, "table" | "family" | "dst" | "gateway" | "priority" | "outLinkName">,
): string {
  let prefix = spec.table !== "main" ? `${spec.table}/` : "";
  if (spec.family === "inet6") prefix += `${spec.outLinkName ?? ""}/`;
  return `${prefix}${spec.family}/${spec.gateway}/${spec.dst}/${spec.priority}`;
}

// ---------------------------------------------------------------------------
// RouteStatuses.net.talos.dev (id = routeId())

export const RouteStatusType = "RouteStatuses.net.talos.dev";
export interface RouteStatusSpec {
  family: string;
  /** Prefix, "" for a default route (Go's zero netip.Prefix). */
  dst: string;
  src: string;
  gateway: string;
  outLinkIndex?: number;
  outLinkName?: string;
  table: string;
  priority: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  mtu?: number;
}

export const routeStatusDefinition = defineResource<RouteStatusSpec>({
  type: RouteStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["route", "routes"],
  printColumns: [
    { name: "Destination", jsonPath: "{.dst}" },
    { name: "Gateway", jsonPath: "{.gateway}" },
    { name: "Link", jsonPath: "{.outLinkName}" },
    { name: "Metric", jsonPath: "{.priority}" },
  ],
  protoSpecType: "talos.resource.definitions.network.RouteStatusSpec",
  toProto: (s) => ({
    family: netValues.family(s.family),
    destination: netIPPrefix(s.dst),
    source: netIP(s.src),
    gateway: netIP(s.gateway),
    out_link_index: s.outLinkIndex ?? 0,
    out_link_name: s.outLinkName ?? "",
    table: netValues.table(s.table),
    priority: s.priority,
    scope: netValues.scope(s.scope),
    type: netValues.routeType(s.type),
    flags: netValues.routeFlags(s.flags),
    protocol: netValues.protocol(s.protocol),
    mtu: s.mtu ?? 0,
  }),
});

export const RouteSpecType = "RouteSpecs.net.talos.dev";
export interface RouteSpecSpec {
  family: string;
  dst: string;
  src: string;
  gateway: string;
  outLinkName?: string;
  table: string;
  priority?: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  layer: ConfigLayer;
  mtu?: number;
}
export const routeSpecDefinition = defineResource<RouteSpecSpec>({
  type: RouteSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.RouteSpecSpec",
  toProto: (s) => ({
    family: netValues.family(s.family),
    destination: netIPPrefix(s.dst),
    source: netIP(s.src),
    gateway: netIP(s.gateway),
    out_link_name: s.outLinkName ?? "",
    table: netValues.table(s.table),
    priority: s.priority ?? 0,
    scope: netValues.scope(s.scope),
    type: netValues.routeType(s.type),
    flags: netValues.routeFlags(s.flags),
    protocol: netValues.protocol(s.protocol),
    config_layer: netValues.layer(s.layer),
    mtu: s.mtu ?? 0,
  }),
});
