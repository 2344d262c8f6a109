// HostnameStatus and HostnameSpecs: the node's hostname, merged from the config layers.

import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

export const HostnameStatusType = "HostnameStatuses.net.talos.dev";
export const HostnameStatusId = "hostname";
export interface HostnameStatusSpec {
  hostname: string;
  domainname: string;
}

export const hostnameStatusDefinition = defineResource<HostnameStatusSpec>({
  type: HostnameStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["hostname"],
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Domainname", jsonPath: "{.domainname}" },
  ],
  protoSpecType: "talos.resource.definitions.network.HostnameStatusSpec",
  toProto: (s) => ({ hostname: s.hostname, domainname: s.domainname }),
});

export const HostnameSpecType = "HostnameSpecs.net.talos.dev";
export interface HostnameSpecSpec {
  hostname: string;
  domainname: string;
  layer: ConfigLayer;
}
export const hostnameSpecDefinition = defineResource<HostnameSpecSpec>({
  type: HostnameSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.HostnameSpecSpec",
  toProto: (s) => ({ hostname: s.hostname, domainname: s.domainname, config_layer: netValues.layer(s.layer) }),
});
