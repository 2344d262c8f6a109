// Vultr: the instance metadata service's /v1.json, read as Talos v1.7 reads it: each interface
// is eth<index> (a private one with MTU 1450), its IPv4 with its netmask and gateway or, without
// one, DHCPv4; the public interfaces' addresses as external IPs; the region code and the
// instance's v2 id. /latest/user-data is the configuration.

import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  prefixFrom,
  dhcp4Operator,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { arr, asObject, obj, str } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const vultrMetadataUrl = "http://169.254.169.254/v1.json";
export const vultrUserDataUrl = "http://169.254.169.254/latest/user-data";
const what = "v1.json";

/** Talos's ParseMetadata for Vultr. */
export function parseVultrMetadata(doc: unknown): PlatformNetworkConfig {
  const m = asObject(doc, what);
  const config = emptyPlatformNetworkConfig();
  const hostname = str(m, "hostname", what);
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  const publicIPs: string[] = [];
  for (const [i, v] of arr(m, "interfaces", what).entries()) {
    const where = `${what} interfaces[${i}]`;
    const iface = asObject(v, where);
    const link = `eth${i}`;
    const type = str(iface, "network-type", where);
    config.links.push(linkUp(link, type === "private" ? 1450 : 0));
    const v4 = obj(iface, "ipv4", where);
    const address = str(v4, "address", where);
    if (address !== "") {
      if (type === "public") publicIPs.push(address);
      // Vultr always gives a dotted netmask.
      config.addresses.push(
        staticAddress(
          link,
          prefixFrom(
            parseIp(address, `${where}.ipv4 address`),
            parseIp(str(v4, "netmask", where), `${where}.ipv4 netmask`),
            `${where}.ipv4`,
          ),
        ),
      );
      const gateway = str(v4, "gateway", where);
      // Talos gives this route no priority (the kernel's 0).
      if (gateway !== "")
        config.routes.push(
          staticRoute(link, "inet4", { gateway: parseIp(gateway, `${where}.ipv4 gateway`), priority: 0 }),
        );
    } else {
      config.operators.push(dhcp4Operator(link));
    }
    const v6 = str(obj(iface, "ipv6", where), "address", where);
    if (v6 !== "" && type === "public") publicIPs.push(v6);
  }
  config.externalIPs = validIps(publicIPs);
  const id = str(m, "instance-v2-id", what);
  const region = str(obj(m, "region", what), "regioncode", what);
  config.metadata = {
    platform: "vultr",
    ...(hostname ? { hostname } : {}),
    ...(region ? { region } : {}),
    ...(id ? { instanceId: id } : {}),
    providerId: `vultr://${id}`,
  };
  return config;
}

export const vultr: CloudPlatform = {
  name: "vultr",
  readNetwork: async (io: PlatformIo) =>
    parseVultrMetadata(parseJson(await getRequired(io.http, vultrMetadataUrl), what)),
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, vultrUserDataUrl)),
};
