// Namespace `network` (and `network-config`): link, address, route, node address,
// hostname, resolver and time server resources, shaped as Talos prints them. Specs
// hold Talos's YAML names (type "ether", flags "UP,BROADCAST", family "inet4", ...);
// toProto turns them into the talos.resource.definitions.enums numbers, IPs into
// common.NetIP/NetIPPrefix. The name tables (network/names.ts) are the single place
// that maps kernel numbers to those names (controllers use them to build specs).
// One file per resource family under network/; this module re-exports them all, so
// importers name one module, and lists the definitions the catalog registers.

import type { ResourceDefinition } from "../definitions.js";
import { addressSpecDefinition, addressStatusDefinition } from "./network/addresses.js";
import { hostnameSpecDefinition, hostnameStatusDefinition } from "./network/hostname.js";
import { linkSpecDefinition, linkStatusDefinition } from "./network/links.js";
import { nodeAddressDefinition, nodeAddressFilterDefinition } from "./network/node-addresses.js";
import { operatorSpecDefinition } from "./network/operators.js";
import { resolverSpecDefinition, resolverStatusDefinition } from "./network/resolvers.js";
import { routeSpecDefinition, routeStatusDefinition } from "./network/routes.js";
import { networkStatusDefinition } from "./network/status.js";
import { timeServerSpecDefinition, timeServerStatusDefinition } from "./network/time-servers.js";

export * from "./network/addresses.js";
export * from "./network/hostname.js";
export * from "./network/links.js";
export {
  hwAddrBytes,
  layerRank,
  netNames,
  netValues,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  type ConfigLayer,
} from "./network/names.js";
export * from "./network/node-addresses.js";
export * from "./network/operators.js";
export * from "./network/resolvers.js";
export * from "./network/routes.js";
export * from "./network/status.js";
export * from "./network/time-servers.js";

export const networkDefinitions: readonly ResourceDefinition<never>[] = [
  linkStatusDefinition,
  addressStatusDefinition,
  routeStatusDefinition,
  nodeAddressDefinition,
  nodeAddressFilterDefinition,
  hostnameStatusDefinition,
  resolverStatusDefinition,
  timeServerStatusDefinition,
  networkStatusDefinition,
  hostnameSpecDefinition,
  resolverSpecDefinition,
  timeServerSpecDefinition,
  addressSpecDefinition,
  routeSpecDefinition,
  linkSpecDefinition,
  operatorSpecDefinition,
] as unknown as readonly ResourceDefinition<never>[];
