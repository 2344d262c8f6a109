// OperatorSpecs: the network operators (DHCPv4, DHCPv6, VIP) a link runs, per config layer.

import { netIP } from "../../codec.js";
import { defineResource } from "../../definitions.js";
import { netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

export const OperatorSpecType = "OperatorSpecs.net.talos.dev";
export interface OperatorSpecSpec {
  operator: "dhcp4" | "dhcp6" | "vip";
  linkName: string;
  requireUp: boolean;
  dhcp4?: { routeMetric: number; skipHostnameRequest?: boolean };
  /** `DUID` is Talos's YAML key (hex, absent for the default). */
  dhcp6?: { DUID?: string; routeMetric: number; skipHostnameRequest?: boolean };
  /** A layer 2 shared address (the cloud providers' VIPs are not built). */
  vip?: { ip: string; gratuitousARP: boolean };
  layer: ConfigLayer;
}
const operatorNumbers = { dhcp4: 0, dhcp6: 1, vip: 2 } as const;
export const operatorSpecDefinition = defineResource<OperatorSpecSpec>({
  type: OperatorSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.OperatorSpecSpec",
  toProto: (s) => ({
    operator: operatorNumbers[s.operator],
    link_name: s.linkName,
    require_up: s.requireUp,
    dhcp4: { route_metric: s.dhcp4?.routeMetric ?? 0, skip_hostname_request: s.dhcp4?.skipHostnameRequest ?? false },
    dhcp6: {
      duid: s.dhcp6?.DUID ?? "",
      route_metric: s.dhcp6?.routeMetric ?? 0,
      skip_hostname_request: s.dhcp6?.skipHostnameRequest ?? false,
    },
    ...(s.vip ? { vip: { ip: netIP(s.vip.ip), gratuitous_arp: s.vip.gratuitousARP } } : {}),
    config_layer: netValues.layer(s.layer),
  }),
});
