// TimeServerStatus and TimeServerSpecs: the NTP servers, merged from the config layers.

import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

export const TimeServerStatusType = "TimeServerStatuses.net.talos.dev";
export const TimeServerStatusId = "timeservers";
export interface TimeServerStatusSpec {
  timeServers: string[];
}

export const timeServerStatusDefinition = defineResource<TimeServerStatusSpec>({
  type: TimeServerStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["timeserver", "timeservers"],
  printColumns: [{ name: "Timeservers", jsonPath: "{.timeServers}" }],
  protoSpecType: "talos.resource.definitions.network.TimeServerStatusSpec",
  toProto: (s) => ({ ntp_servers: s.timeServers }),
});

export const TimeServerSpecType = "TimeServerSpecs.net.talos.dev";
export interface TimeServerSpecSpec {
  timeServers: string[];
  layer: ConfigLayer;
}
export const timeServerSpecDefinition = defineResource<TimeServerSpecSpec>({
  type: TimeServerSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.TimeServerSpecSpec",
  toProto: (s) => ({ ntp_servers: s.timeServers, config_layer: netValues.layer(s.layer) }),
});
