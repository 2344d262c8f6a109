// Akamai (Linode): the metadata service under /v1/, read as Talos v1.7 reads it through
// Linode's client: a token from PUT /v1/token (Metadata-Token-Expiry-Seconds), then
// /v1/instance (the label is the hostname; region, type, numeric id) and /v1/network, whose
// addresses all go on eth0: the public and private IPv4 (the public ones external IPs), the
// IPv6 ranges (managed temporary addresses; each range's address an external IP) and the
// link-local address with a route through the link-local network's ::1. /v1/user-data
// (base64) is the configuration.

import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  parseIp,
  parsePrefix,
  PlatformDataError,
  staticAddress,
  staticRoute,
  validIps,
  type IpPrefix,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import type { AddressSpecSpec } from "../../resources/catalog/network.js";
import { asObject, num, obj, str, strings, type JsonObject } from "./json-fields.js";
import {
  getOptional,
  getRequired,
  MetadataError,
  parseJson,
  type MetadataHttp,
  type MetadataRequest,
} from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const akamaiEndpoint = "http://169.254.169.254/v1/";
/** The lifetime Linode's client asks its tokens for. */
const tokenExpirySeconds = "3600";
const link = "eth0";

/** The headers of a request under a fresh token (a token lives an hour; each read gets its own). */
async function withToken(http: MetadataHttp): Promise<MetadataRequest> {
  const json = { "Content-Type": "application/json", Accept: "application/json" };
  const body = await getRequired(http, `${akamaiEndpoint}token`, {
    method: "PUT",
    headers: { ...json, "Metadata-Token-Expiry-Seconds": tokenExpirySeconds },
  });
  const tokens = parseJson(body, "token");
  const token: unknown = Array.isArray(tokens) ? tokens[0] : undefined;
  if (typeof token !== "string" || token === "")
    throw new MetadataError(`token: no token in ${JSON.stringify(body.toString("utf8").slice(0, 64))}`);
  return { headers: { ...json, "Metadata-Token": token } };
}

function prefixes(o: JsonObject, key: string, where: string): IpPrefix[] {
  return strings(o, key, where).map((p) => parsePrefix(p, `${where} ${key}`));
}

function onLink(p: IpPrefix, scope: "global" | "link", flags: string): AddressSpecSpec {
  return { ...staticAddress(link, p), scope, flags };
}

/** Talos's ParseMetadata for Akamai: `instance` is /v1/instance, `network` /v1/network. */
export function parseAkamaiMetadata(instanceDoc: unknown, networkDoc: unknown): PlatformNetworkConfig {
  const instance = asObject(instanceDoc, "instance");
  const network = asObject(networkDoc, "network");
  const config = emptyPlatformNetworkConfig();
  const label = str(instance, "label", "instance");
  if (label) config.hostnames.push(hostnameSpec(label));
  const v4 = obj(network, "ipv4", "network");
  const v6 = obj(network, "ipv6", "network");
  const publicV4 = prefixes(v4, "public", "network ipv4");
  const ranges = prefixes(v6, "ranges", "network ipv6");
  config.addresses.push(
    ...publicV4.map((p) => onLink(p, "global", "permanent")),
    ...prefixes(v4, "private", "network ipv4").map((p) => onLink(p, "global", "permanent")),
    ...ranges.map((p) => onLink(p, "global", "mngmtmpaddr")),
  );
  const linkLocalText = str(v6, "link_local", "network ipv6");
  if (linkLocalText === "")
    throw new PlatformDataError("network ipv6: no link_local address", { value: linkLocalText });
  const linkLocal = parsePrefix(linkLocalText, "network ipv6 link_local");
  config.addresses.push(onLink(linkLocal, "link", ""));
  // The gateway is ::1 of the link-local address's first group (fe80::1).
  const gateway = parseIp(`${linkLocal.address.split(":")[0]}::1`, "network ipv6 link_local gateway");
  config.routes.push(
    staticRoute(link, "inet6", { gateway, dst: `${linkLocal.address}/${linkLocal.bits}`, priority: 1024 }),
  );
  config.externalIPs = validIps([...publicV4, ...ranges].map((p) => p.address));
  const id = num(instance, "id", "instance");
  config.metadata = platformMetadataSpec("akamai", {
    hostname: label,
    region: str(instance, "region", "instance"),
    instanceType: str(instance, "type", "instance"),
    instanceId: String(id),
    providerId: `linode://${id}`,
  });
  return config;
}

async function readNetwork(io: PlatformIo): Promise<PlatformNetworkConfig> {
  const req = await withToken(io.http);
  const instance = parseJson(await getRequired(io.http, `${akamaiEndpoint}instance`, req), "instance");
  const network = parseJson(await getRequired(io.http, `${akamaiEndpoint}network`, req), "network");
  return parseAkamaiMetadata(instance, network);
}

/** The user data, base64 as the service serves it, decoded. */
async function readUserData(io: PlatformIo): Promise<Buffer | undefined> {
  const encoded = await getOptional(io.http, `${akamaiEndpoint}user-data`, await withToken(io.http));
  if (encoded === undefined) return undefined;
  const text = encoded.toString("utf8").trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0)
    throw new MetadataError(`user-data: not base64: ${JSON.stringify(text.slice(0, 64))}`);
  return nonEmpty(Buffer.from(text, "base64"));
}

export const akamai: CloudPlatform = { name: "akamai", readNetwork, readUserData };
