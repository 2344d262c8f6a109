// Exoscale: the metadata service's keys under /1.0/meta-data/, read as Talos v1.7 reads them:
// the hostname (an FQDN), the service offering (its first word, lower case, is the instance
// type), the instance id, the public IPv4 (an external IP) and the zone (both region and zone).
// A key the service does not have is empty. Exoscale gives no network settings: the links keep
// their defaults (DHCP). /1.0/user-data is the configuration.

import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { getOptional, type MetadataHttp } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const exoscaleMetadataUrl = "http://169.254.169.254/1.0/meta-data";
export const exoscaleUserDataUrl = "http://169.254.169.254/1.0/user-data";

export interface ExoscaleMetadata {
  hostname: string;
  instanceId: string;
  serviceOffering: string;
  publicIPv4: string;
  zone: string;
}

export async function fetchExoscaleMetadata(http: MetadataHttp): Promise<ExoscaleMetadata> {
  const key = async (k: string) => (await getOptional(http, `${exoscaleMetadataUrl}/${k}`))?.toString("utf8") ?? "";
  return {
    hostname: await key("local-hostname"),
    serviceOffering: await key("service-offering"),
    instanceId: await key("instance-id"),
    publicIPv4: await key("public-ipv4"),
    zone: await key("availability-zone"),
  };
}

/** Talos's ParseMetadata for Exoscale. */
export function parseExoscaleMetadata(m: ExoscaleMetadata): PlatformNetworkConfig {
  const config = emptyPlatformNetworkConfig();
  if (m.hostname) config.hostnames.push(hostnameSpec(m.hostname));
  config.externalIPs = validIps(m.publicIPv4 ? [m.publicIPv4] : []);
  config.metadata = platformMetadataSpec("exoscale", {
    hostname: m.hostname,
    region: m.zone,
    zone: m.zone,
    instanceType: (m.serviceOffering.split(" ")[0] ?? "").toLowerCase(),
    instanceId: m.instanceId,
    providerId: `exoscale://${m.instanceId}`,
  });
  return config;
}

export const exoscale: CloudPlatform = {
  name: "exoscale",
  readNetwork: async (io: PlatformIo) => parseExoscaleMetadata(await fetchExoscaleMetadata(io.http)),
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, exoscaleUserDataUrl)),
};
