// OpenNebula: the context CD (an ISO labelled CONTEXT or context) and its context.sh, read as
// Talos v1.7 reads it: with NETWORK=YES each ETH<n>_MAC names link eth<n>, which gets DHCPv4
// when ETH<n>_METHOD is dhcp, else its static IPv4 (ETH<n>_IP/_MASK), MTU, default route
// through ETH<n>_GATEWAY and resolvers ETH<n>_DNS. The hostname is HOSTNAME, SET_HOSTNAME or
// NAME (its domain DNS_HOSTNAME); VMID the instance id. USER_DATA (base64) is the configuration.

import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import {
  emptyPlatformNetworkConfig,
  parseIp,
  PlatformDataError,
  prefixFrom,
  resolvers,
  staticAddress,
  staticRoute,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { decodeBase64 } from "./base64.js";
import { parseEnvFile } from "./env-file.js";
import { MetadataError } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

const contextLabels = ["context", "CONTEXT"];
const contextFile = "context.sh";

/** No context CD, or one without context.sh: OpenNebula did not give the VM its context. */
export class NoContextError extends MetadataError {}

async function readContext(io: PlatformIo): Promise<Map<string, string>> {
  const volume = await io.readVolume(contextLabels, [contextFile]);
  const data = volume?.files.get(contextFile);
  if (!data)
    throw new NoContextError(
      volume ? `${volume.device} holds no ${contextFile}` : "no context CD (a volume labelled CONTEXT)",
      { device: volume?.device ?? "" },
    );
  return parseEnvFile(data.toString("utf8"), contextFile);
}

function mtu(text: string, what: string): number {
  const n = Number(text);
  if (text === "") return 0;
  if (!/^\d+$/.test(text) || n > 0xffffffff)
    throw new PlatformDataError(`${what}: not an MTU: ${JSON.stringify(text)}`, { value: text });
  return n;
}

/** A link's static IPv4, MTU, default route and resolvers from its ETH<n>_ variables. */
function staticInterface(config: PlatformNetworkConfig, env: Map<string, string>, iface: string): void {
  const v = (suffix: string) => env.get(`${iface}_${suffix}`) ?? "";
  const link = iface.toLowerCase();
  config.addresses.push(staticAddress(link, prefixFrom(v("IP"), v("MASK"), `${contextFile} ${iface}_IP`)));
  config.links.push({
    name: link,
    logical: false,
    up: true,
    mtu: mtu(v("MTU"), `${contextFile} ${iface}_MTU`),
    kind: "",
    type: "ether",
    layer: "platform",
  });
  if (v("GATEWAY") !== "")
    config.routes.push(
      staticRoute(link, "inet4", { gateway: parseIp(v("GATEWAY"), `${contextFile} ${iface}_GATEWAY`) }),
    );
  const dns = v("DNS")
    .split(/\s+/)
    .filter((s) => s !== "")
    .map((s) => parseIp(s, `${contextFile} ${iface}_DNS`));
  // Talos adds an empty resolver list too; none is added here, so the other layers' resolvers stay.
  if (dns.length > 0) config.resolvers.push(resolvers(dns));
}

/** Talos's ParseMetadata for OpenNebula. */
export function parseOpennebulaContext(env: Map<string, string>): PlatformNetworkConfig {
  const config = emptyPlatformNetworkConfig();
  if (env.get("NETWORK") === "YES") {
    // By name, so that the specs come in one order (Talos walks a Go map).
    const interfaces = [...env.keys()]
      .filter((k) => k.startsWith("ETH") && k.endsWith("_MAC"))
      .map((k) => k.slice(0, -"_MAC".length))
      .sort();
    for (const iface of interfaces) {
      if (env.get(`${iface}_METHOD`) === "dhcp")
        config.operators.push({
          operator: "dhcp4",
          linkName: iface.toLowerCase(),
          requireUp: true,
          dhcp4: { routeMetric: DEFAULT_ROUTE_METRIC, skipHostnameRequest: true },
          layer: "platform",
        });
      else staticInterface(config, env, iface);
    }
  }
  const hostname = env.get("HOSTNAME") || env.get("SET_HOSTNAME") || env.get("NAME") || "";
  if (hostname !== "")
    config.hostnames.push({ hostname, domainname: env.get("DNS_HOSTNAME") ?? "", layer: "platform" });
  config.metadata = platformMetadataSpec("opennebula", { hostname, instanceId: env.get("VMID") ?? "" });
  return config;
}

/** USER_DATA, base64; undefined when the context has none. */
async function readUserData(io: PlatformIo): Promise<Buffer | undefined> {
  const encoded = (await readContext(io)).get("USER_DATA");
  if (encoded === undefined) return undefined;
  return nonEmpty(decodeBase64(encoded, `${contextFile}: USER_DATA`));
}

export const opennebula: CloudPlatform = {
  name: "opennebula",
  // The context CD may be what gives the node its address.
  local: true,
  readNetwork: async (io: PlatformIo) => parseOpennebulaContext(await readContext(io)),
  readUserData,
};
