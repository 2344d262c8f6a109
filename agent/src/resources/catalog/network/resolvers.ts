// ResolverStatus and ResolverSpecs: the DNS resolvers, merged from the config layers.

import { netIP } from "../../codec.js";
import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

export const ResolverStatusType = "ResolverStatuses.net.talos.dev";
export const ResolverStatusId = "resolvers";
export interface ResolverStatusSpec {
  dnsServers: string[];
}

export const resolverStatusDefinition = defineResource<ResolverStatusSpec>({
  type: ResolverStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["resolvers"],
  printColumns: [{ name: "Resolvers", jsonPath: "{.dnsServers}" }],
  protoSpecType: "talos.resource.definitions.network.ResolverStatusSpec",
  toProto: (s) => ({ dns_servers: s.dnsServers.map(netIP) }),
});

export const ResolverSpecType = "ResolverSpecs.net.talos.dev";
export interface ResolverSpecSpec {
  dnsServers: string[];
  layer: ConfigLayer;
}
export const resolverSpecDefinition = defineResource<ResolverSpecSpec>({
  type: ResolverSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.ResolverSpecSpec",
  toProto: (s) => ({ dns_servers: s.dnsServers.map(netIP), config_layer: netValues.layer(s.layer) }),
});
