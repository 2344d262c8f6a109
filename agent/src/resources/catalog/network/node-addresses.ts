// NodeAddresses and NodeAddressFilters: the node's own addresses, by kind, and the filters that narrow them.

import { netIPPrefix } from "../../codec.js";
import { defineResource } from "../../definitions.js";
import { NETWORK_NAMESPACE } from "./names.js";

// ---------------------------------------------------------------------------
// NodeAddresses.net.talos.dev (ids default, current, accumulative, routed)

export const NodeAddressType = "NodeAddresses.net.talos.dev";
export const NodeAddressIds = {
  default: "default",
  current: "current",
  accumulative: "accumulative",
  routed: "routed",
} as const;
export interface NodeAddressSpec {
  addresses: string[];
}

export const nodeAddressDefinition = defineResource<NodeAddressSpec>({
  type: NodeAddressType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [{ name: "Addresses", jsonPath: "{.addresses}" }],
  protoSpecType: "talos.resource.definitions.network.NodeAddressSpec",
  toProto: (s) => ({ addresses: s.addresses.map(netIPPrefix) }),
});

/** The id of a NodeAddress kind narrowed by a NodeAddressFilter ("current" + "no-k8s" -> "current-no-k8s"). */
export const filteredNodeAddressId = (kind: string, filterId: string): string => `${kind}-${filterId}`;

// ---------------------------------------------------------------------------
// NodeAddressFilters.net.talos.dev (ids no-k8s, only-k8s)

export const NodeAddressFilterType = "NodeAddressFilters.net.talos.dev";
export const NodeAddressFilterIds = { noK8s: "no-k8s", onlyK8s: "only-k8s" } as const;
export interface NodeAddressFilterSpec {
  /** An address is kept only if one of these holds it (when not empty). */
  includeSubnets: string[];
  /** An address one of these holds is dropped. */
  excludeSubnets: string[];
}

export const nodeAddressFilterDefinition = defineResource<NodeAddressFilterSpec>({
  type: NodeAddressFilterType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [
    { name: "Include Subnets", jsonPath: "{.includeSubnets}" },
    { name: "Exclude Subnets", jsonPath: "{.excludeSubnets}" },
  ],
  protoSpecType: "talos.resource.definitions.network.NodeAddressFilterSpec",
  toProto: (s) => ({
    include_subnets: s.includeSubnets.map(netIPPrefix),
    exclude_subnets: s.excludeSubnets.map(netIPPrefix),
  }),
});
