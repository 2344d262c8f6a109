// UpCloud: the metadata service's /metadata/v1.json, read as Talos v1.7 reads it: each
// interface of index N is eth<N-1>; an IPv4 with dhcp gets DHCPv4, an address without it is
// static (its network's length) with a route to its network through its gateway. The first
// address of all and each static IPv6 are external IPs; every address's DNS servers are the
// resolvers. /metadata/v1/user_data is the configuration.

import {
  dhcp4Operator,
  emptyPlatformNetworkConfig,
  familyOf,
  hostnameSpec,
  linkUp,
  parseIp,
  parsePrefix,
  resolvers,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { arr, asObject, bool, num, obj, str, strings, type JsonObject } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const upcloudMetadataUrl = "http://169.254.169.254/metadata/v1.json";
export const upcloudUserDataUrl = "http://169.254.169.254/metadata/v1/user_data";
const what = "v1.json";

/** A static address on `link` and its network's route; returns whether it is an external IP (IPv6). */
function staticIp(config: PlatformNetworkConfig, link: string, ip: JsonObject, where: string): boolean {
  const network = parsePrefix(str(ip, "network", where), `${where} network`);
  const address = parseIp(str(ip, "address", where), `${where} address`);
  const family = familyOf(address);
  config.addresses.push(staticAddress(link, { address, family, bits: network.bits }));
  const gateway = str(ip, "gateway", where);
  if (gateway !== "")
    config.routes.push(
      staticRoute(link, family, {
        gateway: parseIp(gateway, `${where} gateway`),
        dst: `${network.address}/${network.bits}`,
      }),
    );
  return family === "inet6";
}

/** Talos's ParseMetadata for UpCloud. */
export function parseUpcloudMetadata(doc: unknown): PlatformNetworkConfig {
  const m = asObject(doc, what);
  const config = emptyPlatformNetworkConfig();
  const hostname = str(m, "hostname", what);
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  const publicIPs: string[] = [];
  const dns: string[] = [];
  for (const [i, v] of arr(obj(m, "network", what), "interfaces", `${what} network`).entries()) {
    const iface = asObject(v, `${what} interfaces[${i}]`);
    const index = num(iface, "index", `${what} interfaces[${i}]`);
    // An index below 1 would name no link.
    if (index <= 0) continue;
    const link = `eth${index - 1}`;
    config.links.push(linkUp(link));
    for (const [j, a] of arr(iface, "ip_addresses", link).entries()) {
      const where = `${what} ${link} ip_addresses[${j}]`;
      const ip = asObject(a, where);
      if (publicIPs.length === 0) publicIPs.push(str(ip, "address", where));
      dns.push(...validIps(strings(ip, "dns", where)));
      const dhcp = bool(ip, "dhcp", where);
      if (dhcp && str(ip, "family", where) === "IPv4") config.operators.push(dhcp4Operator(link));
      if (!dhcp && staticIp(config, link, ip, where)) publicIPs.push(str(ip, "address", where));
    }
  }
  if (dns.length > 0) config.resolvers.push(resolvers(dns));
  config.externalIPs = validIps(publicIPs);
  const id = str(m, "instance_id", what);
  config.metadata = platformMetadataSpec("upcloud", {
    hostname,
    zone: str(m, "region", what),
    instanceId: id,
    providerId: `upcloud://${id}`,
  });
  return config;
}

export const upcloud: CloudPlatform = {
  name: "upcloud",
  readNetwork: async (io: PlatformIo) =>
    parseUpcloudMetadata(parseJson(await getRequired(io.http, upcloudMetadataUrl), what)),
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, upcloudUserDataUrl)),
};
