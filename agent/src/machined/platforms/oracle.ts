// Oracle Cloud: the instance metadata service v2 (/opc/v2/, every request with
// `Authorization: Bearer Oracle`), read as Talos v1.7 reads it: the instance (hostname, id,
// region, availability domain as the zone, shape) and its VNICs (eth<index>: DHCPv6 and the IPv6
// virtual router where the VNIC has an IPv6 subnet); the metadata service itself as DNS resolver
// and NTP server. The configuration is the base64 user_data of the instance's metadata.

import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import {
  dhcp6Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  parseIp,
  resolvers,
  staticRoute,
  timeServers,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { asArray, asObject, str } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import type { CloudPlatform, PlatformIo } from "./platform.js";

export const oracleEndpoint = "http://169.254.169.254/opc/v2/";
const auth = { Authorization: "Bearer Oracle" };
const metadataServer = "169.254.169.254";

/** Talos's ParseMetadata for Oracle. */
export function parseOracle(instanceDoc: unknown, vnicsDoc: unknown): PlatformNetworkConfig {
  const m = asObject(instanceDoc, "instance");
  const config = emptyPlatformNetworkConfig();
  const hostname = str(m, "hostname", "instance");
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  for (const [i, v] of asArray(vnicsDoc, "vnics").entries()) {
    const vnic = asObject(v, `vnics[${i}]`);
    const router = str(vnic, "ipv6VirtualRouterIp", "vnics");
    if (str(vnic, "ipv6SubnetCidrBlock", "vnics") === "" || router === "") continue;
    const link = `eth${i}`;
    config.operators.push(dhcp6Operator(link, DEFAULT_ROUTE_METRIC));
    config.routes.push(
      staticRoute(link, "inet6", {
        gateway: parseIp(router, `vnics[${i}] ipv6VirtualRouterIp`),
        priority: 2 * DEFAULT_ROUTE_METRIC,
      }),
    );
  }
  config.resolvers.push(resolvers([metadataServer]));
  config.timeServers.push(timeServers([metadataServer]));
  const domain = str(m, "availabilityDomain", "instance");
  const zone = domain.slice(domain.lastIndexOf(":") + 1);
  const id = str(m, "id", "instance");
  const region = str(m, "region", "instance");
  const shape = str(m, "shape", "instance");
  config.metadata = {
    platform: "oracle",
    ...(hostname ? { hostname } : {}),
    ...(region ? { region } : {}),
    ...(zone ? { zone } : {}),
    ...(shape ? { instanceType: shape } : {}),
    ...(id ? { instanceId: id } : {}),
    providerId: `oci://${id}`,
  };
  return config;
}

async function readNetwork(io: PlatformIo): Promise<PlatformNetworkConfig> {
  const instance = parseJson(await getRequired(io.http, `${oracleEndpoint}instance/`, { headers: auth }), "instance");
  const vnics = parseJson(await getRequired(io.http, `${oracleEndpoint}vnics/`, { headers: auth }), "vnics");
  return parseOracle(instance, vnics);
}

/** The user_data key, base64-decoded; what is not base64 is no configuration, as Talos takes it. */
async function readUserData(io: PlatformIo): Promise<Buffer | undefined> {
  const data = (await getOptional(io.http, `${oracleEndpoint}instance/metadata/user_data`, { headers: auth }))
    ?.toString("utf8")
    .trim();
  if (!data || !/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) return undefined;
  return Buffer.from(data, "base64");
}

export const oracle: CloudPlatform = { name: "oracle", readNetwork, readUserData };
