// NetworkStatus: the readiness summary the boot and the health checks wait on.

import { defineResource } from "../../definitions.js";
import { NETWORK_NAMESPACE } from "./names.js";

// ---------------------------------------------------------------------------
// NetworkStatuses.net.talos.dev (id "status"): readiness summary.

export const NetworkStatusType = "NetworkStatuses.net.talos.dev";
export const NetworkStatusId = "status";
export interface NetworkStatusSpec {
  addressReady: boolean;
  connectivityReady: boolean;
  hostnameReady: boolean;
  etcFilesReady: boolean;
}

export const networkStatusDefinition = defineResource<NetworkStatusSpec>({
  type: NetworkStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["netstatus", "netstatuses"],
  printColumns: [
    { name: "Address", jsonPath: "{.addressReady}" },
    { name: "Connectivity", jsonPath: "{.connectivityReady}" },
    { name: "Hostname", jsonPath: "{.hostnameReady}" },
    { name: "Etc", jsonPath: "{.etcFilesReady}" },
  ],
  protoSpecType: "talos.resource.definitions.network.StatusSpec",
  toProto: (s) => ({
    address_ready: s.addressReady,
    connectivity_ready: s.connectivityReady,
    hostname_ready: s.hostnameReady,
    etc_files_ready: s.etcFilesReady,
  }),
});
