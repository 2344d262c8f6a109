// AddressStatuses and AddressSpecs: addresses on links, reported and asked for.

import { netIP, netIPPrefix } from "../../codec.js";
import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

// ---------------------------------------------------------------------------
// IDs (as Talos builds them).

export function addressId(linkName: string, prefix: string): string {
  return `${linkName}/${prefix}`;
}

// ---------------------------------------------------------------------------
// AddressStatuses.net.talos.dev (id = <link>/<prefix>)

export const AddressStatusType = "AddressStatuses.net.talos.dev";
export interface AddressStatusSpec {
  address: string;
  local?: string;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  linkIndex: number;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
}

export const addressStatusDefinition = defineResource<AddressStatusSpec>({
  type: AddressStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["address", "addresses"],
  printColumns: [
    { name: "Address", jsonPath: "{.address}" },
    { name: "Link", jsonPath: "{.linkName}" },
  ],
  protoSpecType: "talos.resource.definitions.network.AddressStatusSpec",
  toProto: (s) => ({
    address: netIPPrefix(s.address),
    local: netIP(s.local ?? ""),
    broadcast: netIP(s.broadcast ?? ""),
    anycast: netIP(s.anycast ?? ""),
    multicast: netIP(s.multicast ?? ""),
    link_index: s.linkIndex,
    link_name: s.linkName,
    family: netValues.family(s.family),
    scope: netValues.scope(s.scope),
    flags: netValues.addressFlags(s.flags),
  }),
});

export const AddressSpecType = "AddressSpecs.net.talos.dev";
export interface AddressSpecSpec {
  address: string;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
  announceWithARP?: boolean;
  layer: ConfigLayer;
}
export const addressSpecDefinition = defineResource<AddressSpecSpec>({
  type: AddressSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.AddressSpecSpec",
  toProto: (s) => ({
    address: netIPPrefix(s.address),
    link_name: s.linkName,
    family: netValues.family(s.family),
    scope: netValues.scope(s.scope),
    flags: netValues.addressFlags(s.flags),
    announce_with_arp: s.announceWithARP ?? false,
    config_layer: netValues.layer(s.layer),
  }),
});
