// The host DNS cache's resources in namespace `network`: HostDNSConfig `config`
// (whether it runs and where it listens) and one DNSResolveCache per listener
// (`udp-127.0.0.53:53`, `tcp-127.0.0.53:53`), shaped as Talos prints them.

import { netIP, netIPPort } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { NETWORK_NAMESPACE } from "./network.js";

export const HostDNSConfigType = "HostDNSConfigs.net.talos.dev";
export const HostDNSConfigId = "config";
/** Key order is Talos's YAML order; optional keys are Go `omitempty` fields. */
export interface HostDNSConfigSpec {
  enabled: boolean;
  /** "127.0.0.53:53" ("[::1]:53" for IPv6). */
  listenAddresses?: string[];
  serviceHostDNSAddress?: string;
  resolveMemberNames?: boolean;
}

export const hostDNSConfigDefinition = defineResource<HostDNSConfigSpec>({
  type: HostDNSConfigType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [
    { name: "Enabled", jsonPath: "{.enabled}" },
    { name: "Listen Addresses", jsonPath: "{.listenAddresses}" },
  ],
  protoSpecType: "talos.resource.definitions.network.HostDNSConfigSpec",
  toProto: (s) => ({
    enabled: s.enabled,
    listen_addresses: (s.listenAddresses ?? []).map(netIPPort),
    service_host_dns_address: netIP(s.serviceHostDNSAddress ?? ""),
    resolve_member_names: s.resolveMemberNames ?? false,
  }),
});

export const DNSResolveCacheType = "DNSResolveCaches.net.talos.dev";
export interface DNSResolveCacheSpec {
  status: string;
}

export const dnsResolveCacheDefinition = defineResource<DNSResolveCacheSpec>({
  type: DNSResolveCacheType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [{ name: "Status", jsonPath: "{.status}" }],
  protoSpecType: "talos.resource.definitions.network.DNSResolveCacheSpec",
  toProto: (s) => ({ status: s.status }),
});

export const hostDnsDefinitions: readonly ResourceDefinition<never>[] = [
  hostDNSConfigDefinition,
  dnsResolveCacheDefinition,
] as unknown as readonly ResourceDefinition<never>[];
