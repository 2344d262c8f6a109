// Hetzner Cloud: the metadata service under /hetzner/v1/, read as Talos v1.7 reads it: the
// hostname, instance id, availability zone (its region the part before the first "-") and public
// IPv4 as separate keys, and network-config (cloud-init's version 1): each physical interface by
// its name, DHCPv4 subnets, static addresses (an IPv6 one also an external IP) and the IPv6
// gateway. /hetzner/v1/userdata is the configuration.

import { parse as parseYaml } from "yaml";
import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  parsePrefix,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import { describeError } from "../../errors.js";
import { arr, asObject, bool, num, str } from "./json-fields.js";
import { getOptional, getRequired, MetadataError, type MetadataHttp } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const hcloudEndpoint = "http://169.254.169.254/hetzner/v1/";
const networkWhat = "metadata/network-config";

export interface HcloudMetadata {
  hostname: string;
  instanceId: string;
  availabilityZone: string;
  publicIPv4: string;
}

export async function fetchHcloudMetadata(http: MetadataHttp): Promise<HcloudMetadata> {
  const key = async (k: string) => (await getOptional(http, `${hcloudEndpoint}metadata/${k}`))?.toString("utf8") ?? "";
  return {
    hostname: await key("hostname"),
    instanceId: await key("instance-id"),
    availabilityZone: await key("availability-zone"),
    publicIPv4: await key("public-ipv4"),
  };
}

export function parseHcloudNetworkConfig(text: string): unknown {
  try {
    return parseYaml(text);
  } catch (err) {
    throw new MetadataError(`${networkWhat}: malformed YAML: ${describeError(err)}`, {}, { cause: err });
  }
}

/** Talos's ParseMetadata for Hetzner Cloud. */
export function parseHcloud(networkDoc: unknown, m: HcloudMetadata): PlatformNetworkConfig {
  const net = asObject(networkDoc, networkWhat);
  if (num(net, "version", networkWhat) !== 1)
    throw new MetadataError(`network-config metadata version=${num(net, "version", networkWhat)} is not supported`);
  const config = emptyPlatformNetworkConfig();
  if (m.hostname) config.hostnames.push(hostnameSpec(m.hostname));
  const publicIPs = m.publicIPv4 ? [m.publicIPv4] : [];
  for (const v of arr(net, "config", networkWhat)) {
    const entry = asObject(v, `${networkWhat} config`);
    if (str(entry, "type", networkWhat) !== "physical") continue;
    const link = str(entry, "name", networkWhat);
    const where = `${networkWhat} ${link}`;
    config.links.push(linkUp(link));
    for (const s of arr(entry, "subnets", where).map((x) => asObject(x, `${where} subnets`))) {
      const type = str(s, "type", where);
      if (type === "dhcp" && bool(s, "ipv4", where)) {
        config.operators.push({
          operator: "dhcp4",
          linkName: link,
          requireUp: false,
          dhcp4: { routeMetric: DEFAULT_ROUTE_METRIC },
          layer: "platform",
        });
      }
      if (type === "static") {
        const address = str(s, "address", where);
        const p = parsePrefix(address, `${where} address`);
        if (p.family === "inet6") publicIPs.push(p.address);
        config.addresses.push(staticAddress(link, p));
      }
      const gateway = str(s, "gateway", where);
      if (gateway !== "" && bool(s, "ipv6", where))
        config.routes.push(staticRoute(link, "inet6", { gateway: parseIp(gateway, `${where} gateway`) }));
    }
  }
  config.externalIPs = validIps(publicIPs);
  const region = m.availabilityZone.split("-")[0] ?? "";
  config.metadata = {
    platform: "hcloud",
    ...(m.hostname ? { hostname: m.hostname } : {}),
    ...(region ? { region } : {}),
    ...(m.availabilityZone ? { zone: m.availabilityZone } : {}),
    ...(m.instanceId ? { instanceId: m.instanceId } : {}),
    providerId: `hcloud://${m.instanceId}`,
  };
  return config;
}

async function readNetwork(io: PlatformIo): Promise<PlatformNetworkConfig> {
  const metadata = await fetchHcloudMetadata(io.http);
  const text = (await getRequired(io.http, `${hcloudEndpoint}metadata/network-config`)).toString("utf8");
  return parseHcloud(parseHcloudNetworkConfig(text), metadata);
}

export const hcloud: CloudPlatform = {
  name: "hcloud",
  readNetwork,
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, `${hcloudEndpoint}userdata`)),
};
