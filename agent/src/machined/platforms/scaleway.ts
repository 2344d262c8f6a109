// Scaleway: the instance metadata service on 169.254.42.42, read as Talos v1.7 reads it:
// /conf?format=json gives the hostname, the public IPv4 and the IPv6 address with its netmask
// and gateway, the commercial type and the zone (its region the zone's first two parts). eth0
// gets DHCPv4, a link route to the metadata service and the static IPv6. The configuration is
// /user_data/cloud-init, which the service serves only to a privileged source port.

import {
  dhcp4Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  PlatformDataError,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import { asObject, obj, str } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const scalewayMetadataUrl = "http://169.254.42.42/conf?format=json";
export const scalewayUserDataUrl = "http://169.254.42.42/user_data/cloud-init";
const metadataServiceRoute = "169.254.42.42/32";
const what = "conf";
const link = "eth0";

/** The IPv6 address and its default route; none when the instance has no IPv6. */
function ipv6(config: PlatformNetworkConfig, v6: Record<string, unknown>): string[] {
  const where = `${what} ipv6`;
  const address = str(v6, "address", where);
  if (address === "") return [];
  const netmask = str(v6, "netmask", where);
  const bits = Number(netmask);
  if (!/^\d+$/.test(netmask) || bits > 128)
    throw new PlatformDataError(`${where}: not a prefix length: ${JSON.stringify(netmask)}`, { value: netmask });
  config.addresses.push(staticAddress(link, { address: parseIp(address, `${where} address`), family: "inet6", bits }));
  config.routes.push(
    staticRoute(link, "inet6", {
      gateway: parseIp(str(v6, "gateway", where), `${where} gateway`),
      priority: 2 * DEFAULT_ROUTE_METRIC,
    }),
  );
  return [address];
}

/** Talos's ParseMetadata for Scaleway. */
export function parseScalewayMetadata(doc: unknown): PlatformNetworkConfig {
  const m = asObject(doc, what);
  const config = emptyPlatformNetworkConfig();
  const hostname = str(m, "hostname", what);
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  const publicIPv4 = str(obj(m, "public_ip", what), "address", `${what} public_ip`);
  config.links.push(linkUp(link));
  config.routes.push(staticRoute(link, "inet4", { dst: metadataServiceRoute, scope: "link" }));
  config.operators.push(dhcp4Operator(link));
  const publicIPv6 = ipv6(config, obj(m, "ipv6", what));
  config.externalIPs = validIps([...(publicIPv4 ? [publicIPv4] : []), ...publicIPv6]);
  const zone = str(obj(m, "location", what), "zone_id", `${what} location`);
  const id = str(m, "id", what);
  config.metadata = platformMetadataSpec("scaleway", {
    hostname,
    region: zone.split("-").slice(0, 2).join("-"),
    zone,
    instanceType: str(m, "commercial_type", what),
    instanceId: id,
    providerId: `scaleway://instance/${zone}/${id}`,
  });
  return config;
}

export const scaleway: CloudPlatform = {
  name: "scaleway",
  readNetwork: async (io: PlatformIo) =>
    parseScalewayMetadata(parseJson(await getRequired(io.http, scalewayMetadataUrl), what)),
  readUserData: async (io: PlatformIo) =>
    nonEmpty(await getOptional(io.http, scalewayUserDataUrl, { lowSourcePort: true })),
};
