// DigitalOcean: the droplet metadata service's /metadata/v1.json, read as Talos v1.7 reads it:
// the public interface is eth0 (its IPv4 and IPv6 with their gateways, the anchor IPv4 as a
// link-scope address, a route to the metadata service itself), private ones eth1..; the DNS
// nameservers; public addresses as external IPs. /metadata/v1/user-data is the configuration.

import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  prefixFrom,
  resolvers,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import { arr, asObject, num, obj, str, strings, type JsonObject } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const digitalOceanMetadataUrl = "http://169.254.169.254/metadata/v1.json";
export const digitalOceanUserDataUrl = "http://169.254.169.254/metadata/v1/user-data";
const what = "metadata/v1.json";

function ipv4Address(link: string, v4: JsonObject, where: string) {
  return staticAddress(link, prefixFrom(str(v4, "ip_address", where), str(v4, "netmask", where), where));
}

/** Talos's ParseMetadata for DigitalOcean. */
export function parseDigitalOceanMetadata(doc: unknown): PlatformNetworkConfig {
  const m = asObject(doc, what);
  const config = emptyPlatformNetworkConfig();
  const hostname = str(m, "hostname", what);
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  const nameservers = validIps(strings(obj(m, "dns", what), "nameservers", what));
  if (strings(obj(m, "dns", what), "nameservers", what).length > 0) config.resolvers.push(resolvers(nameservers));
  config.links.push(linkUp("eth0"));
  const interfaces = obj(m, "interfaces", what);
  const publicIPs: string[] = [];
  for (const [i, v] of arr(interfaces, "public", what).entries()) {
    const iface = asObject(v, `${what} interfaces.public[${i}]`);
    const where = `${what} interfaces.public[${i}]`;
    if (iface["ipv4"]) {
      const v4 = obj(iface, "ipv4", where);
      config.addresses.push(ipv4Address("eth0", v4, `${where}.ipv4`));
      publicIPs.push(str(v4, "ip_address", where));
      const gateway = str(v4, "gateway", where);
      if (gateway) {
        const gw = parseIp(gateway, `${where}.ipv4 gateway`);
        config.routes.push(staticRoute("eth0", "inet4", { gateway: gw }));
        // The metadata service keeps being reached through the public gateway.
        config.routes.push(staticRoute("eth0", "inet4", { gateway: gw, dst: "169.254.169.254/32", priority: 512 }));
      }
    }
    if (iface["ipv6"]) {
      const v6 = obj(iface, "ipv6", where);
      config.addresses.push(
        staticAddress(
          "eth0",
          prefixFrom(str(v6, "ip_address", where), String(num(v6, "cidr", where)), `${where}.ipv6`),
        ),
      );
      publicIPs.push(str(v6, "ip_address", where));
      const gateway = str(v6, "gateway", where);
      if (gateway)
        config.routes.push(
          staticRoute("eth0", "inet6", {
            gateway: parseIp(gateway, `${where}.ipv6 gateway`),
            priority: 2 * DEFAULT_ROUTE_METRIC,
          }),
        );
    }
    if (iface["anchor_ipv4"])
      config.addresses.push({
        ...ipv4Address("eth0", obj(iface, "anchor_ipv4", where), `${where}.anchor_ipv4`),
        scope: "link",
      });
  }
  for (const [i, v] of arr(interfaces, "private", what).entries()) {
    const link = `eth${i + 1}`;
    const where = `${what} interfaces.private[${i}]`;
    const iface = asObject(v, where);
    config.links.push(linkUp(link));
    if (iface["ipv4"]) config.addresses.push(ipv4Address(link, obj(iface, "ipv4", where), `${where}.ipv4`));
  }
  config.externalIPs = validIps(publicIPs);
  const droplet = num(m, "droplet_id", what);
  const region = str(m, "region", what);
  config.metadata = {
    platform: "digital-ocean",
    ...(hostname ? { hostname } : {}),
    ...(region ? { region } : {}),
    instanceId: String(droplet),
    providerId: `digitalocean://${droplet}`,
  };
  return config;
}

export const digitalOcean: CloudPlatform = {
  name: "digital-ocean",
  readNetwork: async (io: PlatformIo) =>
    parseDigitalOceanMetadata(parseJson(await getRequired(io.http, digitalOceanMetadataUrl), what)),
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, digitalOceanUserDataUrl)),
};
