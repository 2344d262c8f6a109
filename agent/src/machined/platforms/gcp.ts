// Google Compute Engine: the metadata server under /computeMetadata/v1/, every request with
// `Metadata-Flavor: Google`, read as Talos v1.7 reads it through Google's metadata library:
// the project id, the instance's name, id, hostname, zone, machine type and preemptibility,
// and its network interfaces (eth<N> by position: DHCPv4, the MTU, IPv6 with its gateway,
// one-to-one NAT addresses as external IPs); the metadata server itself as DNS resolver and
// NTP server. The `user-data` instance attribute is the configuration.

import {
  dhcp4Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  parsePrefix,
  resolvers,
  staticAddress,
  staticRoute,
  timeServers,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import { arr, asArray, asObject, num, str, strings } from "./json-fields.js";
import { getOptional, getRequired, parseJson, type MetadataHttp } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const gcpEndpoint = "http://169.254.169.254/computeMetadata/v1/";
const flavor = { "Metadata-Flavor": "Google" };
const resolverServer = "169.254.169.254";
const timeServer = "metadata.google.internal";

export interface GcpMetadata {
  projectId: string;
  name: string;
  hostname: string;
  /** The zone's name (the part after the last "/" of projects/N/zones/Z). */
  zone: string;
  instanceType: string;
  instanceId: string;
  preempted: string;
}

export interface GcpInterface {
  accessConfigs: { externalIp: string; type: string }[];
  gatewayIpv6: string;
  ipv6: string[];
  mtu: number;
}

const get = (http: MetadataHttp, path: string) => getRequired(http, gcpEndpoint + path, { headers: flavor });
const lastPart = (s: string) => s.slice(s.lastIndexOf("/") + 1).trim();

export async function fetchGcpMetadata(http: MetadataHttp): Promise<GcpMetadata> {
  const text = async (path: string) => (await get(http, path)).toString("utf8").trim();
  return {
    projectId: await text("project/project-id"),
    name: await text("instance/name"),
    instanceType: lastPart(await text("instance/machine-type")),
    instanceId: await text("instance/id"),
    hostname: await text("instance/hostname"),
    zone: lastPart(await text("instance/zone")),
    preempted: await text("instance/scheduling/preemptible"),
  };
}

export function parseGcpInterfaces(doc: unknown): GcpInterface[] {
  const what = "instance/network-interfaces";
  return asArray(doc, what).map((v, i) => {
    const o = asObject(v, `${what}[${i}]`);
    return {
      accessConfigs: arr(o, "accessConfigs", what).map((a) => {
        const ac = asObject(a, `${what}[${i}].accessConfigs`);
        return { externalIp: str(ac, "externalIp", what), type: str(ac, "type", what) };
      }),
      gatewayIpv6: str(o, "gatewayIpv6", what),
      ipv6: strings(o, "ipv6", what),
      mtu: num(o, "mtu", what),
    };
  });
}

export async function fetchGcpInterfaces(http: MetadataHttp): Promise<GcpInterface[]> {
  const path = "instance/network-interfaces/?recursive=true&alt=json";
  return parseGcpInterfaces(parseJson(await get(http, path), path));
}

/** Go's strconv.ParseBool, false for anything it would refuse. */
function goBool(s: string): boolean {
  return ["1", "t", "T", "TRUE", "true", "True"].includes(s);
}

/** Talos's ParseMetadata for GCP. */
export function parseGcpMetadata(m: GcpMetadata, interfaces: GcpInterface[]): PlatformNetworkConfig {
  const config = emptyPlatformNetworkConfig();
  if (m.hostname) config.hostnames.push(hostnameSpec(m.hostname));
  config.resolvers.push(resolvers([resolverServer]));
  config.timeServers.push(timeServers([timeServer]));
  for (const [i, iface] of interfaces.entries()) {
    const link = `eth${i}`;
    config.links.push(linkUp(link, iface.mtu));
    config.operators.push(dhcp4Operator(link));
    for (const address of iface.ipv6) {
      if (address === "" || iface.gatewayIpv6 === "") continue;
      config.addresses.push(staticAddress(link, parsePrefix(address, `${link} ipv6`)));
      config.routes.push(
        staticRoute(link, "inet6", {
          gateway: parseIp(iface.gatewayIpv6, `${link} gatewayIpv6`),
          priority: 2 * DEFAULT_ROUTE_METRIC,
        }),
      );
    }
  }
  for (const iface of interfaces) {
    config.externalIPs.push(
      ...validIps(iface.accessConfigs.filter((ac) => ac.type === "ONE_TO_ONE_NAT").map((ac) => ac.externalIp)),
    );
  }
  const dash = m.zone.lastIndexOf("-");
  const region = dash < 0 ? m.zone : m.zone.slice(0, dash);
  config.metadata = {
    platform: "gcp",
    ...(m.hostname ? { hostname: m.hostname } : {}),
    ...(region ? { region } : {}),
    ...(m.zone ? { zone: m.zone } : {}),
    ...(m.instanceType ? { instanceType: m.instanceType } : {}),
    ...(m.instanceId ? { instanceId: m.instanceId } : {}),
    providerId: `gce://${m.projectId}/${m.zone}/${m.name}`,
    ...(goBool(m.preempted) ? { spot: true } : {}),
  };
  return config;
}

export const gcp: CloudPlatform = {
  name: "gcp",
  readNetwork: async (io: PlatformIo) =>
    parseGcpMetadata(await fetchGcpMetadata(io.http), await fetchGcpInterfaces(io.http)),
  readUserData: async (io: PlatformIo) =>
    nonEmpty(await getOptional(io.http, `${gcpEndpoint}instance/attributes/user-data`, { headers: flavor })),
};
