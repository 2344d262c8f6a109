// What a cloud platform says about the node's network, as Talos's PlatformNetworkConfig
// holds it: platform-layer specs (links, addresses, routes, operators, hostname, resolvers,
// time servers), the instance's external addresses and its PlatformMetadata. Built by each
// platform's parser (machined/platforms/*), published by network.PlatformConfigController.

import { isIP } from "node:net";
import { InvalidInputError } from "../errors.js";
import type {
  AddressSpecSpec,
  HostnameSpecSpec,
  LinkSpecSpec,
  OperatorSpecSpec,
  ResolverSpecSpec,
  RouteSpecSpec,
  TimeServerSpecSpec,
} from "../resources/catalog/network.js";
import type { PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import { DEFAULT_ROUTE_METRIC, type KnownLink } from "./config-specs.js";

export interface PlatformNetworkConfig {
  addresses: AddressSpecSpec[];
  links: LinkSpecSpec[];
  routes: RouteSpecSpec[];
  hostnames: HostnameSpecSpec[];
  resolvers: ResolverSpecSpec[];
  timeServers: TimeServerSpecSpec[];
  operators: OperatorSpecSpec[];
  /** Addresses the instance is reached at from outside (NAT), not on any link. */
  externalIPs: string[];
  /**
   * Links the platform names by MAC address: the name the specs use (eth<index>, as Talos
   * falls back to) -> the MAC. The specs follow the node's link with that MAC once it is known.
   */
  linkMacs?: Record<string, string>;
  metadata?: PlatformMetadataSpec;
}

export function emptyPlatformNetworkConfig(): PlatformNetworkConfig {
  return {
    addresses: [],
    links: [],
    routes: [],
    hostnames: [],
    resolvers: [],
    timeServers: [],
    operators: [],
    externalIPs: [],
  };
}

export type Family = "inet4" | "inet6";

export interface IpPrefix {
  address: string;
  family: Family;
  bits: number;
}

/** A platform's value that is not what its protocol says it is. */
export class PlatformDataError extends InvalidInputError {}

export function familyOf(ip: string): Family {
  return isIP(ip) === 6 ? "inet6" : "inet4";
}

/** An IP address in its canonical form (IPv6 compressed, lower case), as Go's netip prints it. */
export function canonicalIp(ip: string): string {
  return isIP(ip) === 6 ? new URL(`http://[${ip}]/`).hostname.slice(1, -1) : ip;
}

/** An IP address (canonical); anything else is a PlatformDataError naming `what`. */
export function parseIp(text: string, what: string): string {
  if (isIP(text) === 0)
    throw new PlatformDataError(`${what}: not an IP address: ${JSON.stringify(text)}`, { value: text });
  return canonicalIp(text);
}

/** The addresses of `texts` that are IP addresses, canonical; the others left out (Talos skips them). */
export function validIps(texts: readonly string[]): string[] {
  return texts.filter((t) => isIP(t) !== 0).map(canonicalIp);
}

/** `address/bits`; anything else is a PlatformDataError naming `what`. */
export function parsePrefix(text: string, what: string): IpPrefix {
  const slash = text.lastIndexOf("/");
  const address = slash < 0 ? "" : text.slice(0, slash);
  const bitsText = slash < 0 ? "" : text.slice(slash + 1);
  const version = isIP(address);
  const bits = Number(bitsText);
  if (version === 0 || !/^\d+$/.test(bitsText) || bits > (version === 4 ? 32 : 128)) {
    throw new PlatformDataError(`${what}: not an IP prefix: ${JSON.stringify(text)}`, { value: text });
  }
  return { address: canonicalIp(address), family: version === 4 ? "inet4" : "inet6", bits };
}

/**
 * An address with its mask as platforms write them (Talos's IPPrefixFrom): `address/bits`, or an
 * address and a netmask given as bits or as a (v4 or v6) mask; no mask is a host prefix. A mask
 * with holes counts as 0 bits, as Go's IPMask.Size says.
 */
export function prefixFrom(address: string, netmask: string, what: string): IpPrefix {
  const slash = address.indexOf("/");
  const addr = slash < 0 ? address : address.slice(0, slash);
  const mask = slash < 0 ? netmask : address.slice(slash + 1);
  const canonical = parseIp(addr, what);
  const family = familyOf(addr);
  let bits: number;
  if (mask === "") bits = family === "inet4" ? 32 : 128;
  else if (/^\d+$/.test(mask)) bits = Number(mask);
  else bits = maskLength(parseIp(mask, `${what} netmask`));
  if (family === "inet4" && bits > 32)
    throw new PlatformDataError(`${what}: netmask ${JSON.stringify(mask)} is not of the address's family`, {
      value: mask,
    });
  if (bits > 128) throw new PlatformDataError(`${what}: not a netmask: ${JSON.stringify(mask)}`, { value: mask });
  return { address: canonical, family, bits };
}

/** The number of leading ones of a canonical mask; 0 for one with holes. */
function maskLength(mask: string): number {
  const bitsText = ipBits(mask);
  return /^1*0*$/.test(bitsText) ? (bitsText.indexOf("0") < 0 ? bitsText.length : bitsText.indexOf("0")) : 0;
}

function ipBits(ip: string): string {
  if (familyOf(ip) === "inet4")
    return ip
      .split(".")
      .map((b) => Number(b).toString(2).padStart(8, "0"))
      .join("");
  const [head = "", tail = ""] = ip.split("::");
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const h = groups(head);
  const t = ip.includes("::") ? groups(tail) : [];
  const all = ip.includes("::") ? [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t] : h;
  return all.map((g) => parseInt(g, 16).toString(2).padStart(16, "0")).join("");
}

/** A netmask's length (255.255.255.0 -> 24); a mask with holes is a PlatformDataError. */
export function maskBits(mask: string, what: string): number {
  parseIp(mask, what);
  const bytes = isIP(mask) === 4 ? mask.split(".").map(Number) : [];
  const bitsText = bytes.map((b) => b.toString(2).padStart(8, "0")).join("");
  if (bytes.length !== 4 || !/^1*0*$/.test(bitsText))
    throw new PlatformDataError(`${what}: not a netmask: ${JSON.stringify(mask)}`, { value: mask });
  return bitsText.indexOf("0") < 0 ? 32 : bitsText.indexOf("0");
}

export function staticAddress(linkName: string, p: IpPrefix): AddressSpecSpec {
  return {
    address: `${p.address}/${p.bits}`,
    linkName,
    family: p.family,
    scope: "global",
    flags: "permanent",
    layer: "platform",
  };
}

export interface RouteOptions {
  gateway?: string;
  /** Destination prefix; "" for the default route. */
  dst?: string;
  src?: string;
  priority?: number;
  scope?: "global" | "link" | "host";
  table?: string;
}

/** A static platform-layer route out of `linkName`. */
export function staticRoute(linkName: string, family: Family, o: RouteOptions): RouteSpecSpec {
  return {
    family,
    dst: o.dst ?? "",
    src: o.src ?? "",
    gateway: o.gateway ?? "",
    outLinkName: linkName,
    table: o.table ?? "main",
    priority: o.priority ?? DEFAULT_ROUTE_METRIC,
    scope: o.scope ?? "global",
    type: "unicast",
    flags: "",
    protocol: "static",
    layer: "platform",
  };
}

export function linkUp(name: string, mtu = 0): LinkSpecSpec {
  return { name, logical: false, up: true, mtu, kind: "", type: "ether", layer: "platform" };
}

export function dhcp4Operator(linkName: string, routeMetric = DEFAULT_ROUTE_METRIC): OperatorSpecSpec {
  return { operator: "dhcp4", linkName, requireUp: true, dhcp4: { routeMetric }, layer: "platform" };
}

export function dhcp6Operator(linkName: string, routeMetric = 2 * DEFAULT_ROUTE_METRIC): OperatorSpecSpec {
  return { operator: "dhcp6", linkName, requireUp: true, dhcp6: { routeMetric }, layer: "platform" };
}

/** The hostname spec of an FQDN: the first label is the hostname, the rest the domain (Talos's ParseFQDN). */
export function hostnameSpec(fqdn: string): HostnameSpecSpec {
  const dot = fqdn.indexOf(".");
  const hostname = dot < 0 ? fqdn : fqdn.slice(0, dot);
  const domainname = dot < 0 ? "" : fqdn.slice(dot + 1);
  if (hostname === "") throw new PlatformDataError(`hostname: empty in ${JSON.stringify(fqdn)}`, { value: fqdn });
  if (hostname.length > 63)
    throw new PlatformDataError(`hostname: longer than 63 characters: ${JSON.stringify(hostname)}`, { value: fqdn });
  return { hostname, domainname, layer: "platform" };
}

export function resolvers(dnsServers: string[]): ResolverSpecSpec {
  return { dnsServers, layer: "platform" };
}

export function timeServers(servers: string[]): TimeServerSpecSpec {
  return { timeServers: servers, layer: "platform" };
}

/** The specs with each link named by MAC renamed to the node's link with that MAC, where it has one. */
export function withLinksByMac(config: PlatformNetworkConfig, links: readonly KnownLink[]): PlatformNetworkConfig {
  const renames = new Map<string, string>();
  for (const [name, mac] of Object.entries(config.linkMacs ?? {})) {
    const found = linkByMac(mac, links);
    if (found) renames.set(name, found);
  }
  if (renames.size === 0) return config;
  const rename = (name: string) => renames.get(name) ?? name;
  return {
    ...config,
    addresses: config.addresses.map((a) => ({ ...a, linkName: rename(a.linkName) })),
    links: config.links.map((l) => ({
      ...l,
      name: rename(l.name),
      ...(l.masterName !== undefined ? { masterName: rename(l.masterName) } : {}),
    })),
    routes: config.routes.map((r) => (r.outLinkName !== undefined ? { ...r, outLinkName: rename(r.outLinkName) } : r)),
    operators: config.operators.map((o) => ({ ...o, linkName: rename(o.linkName) })),
  };
}

/** The node's link with this MAC address (by permanent address, else current), if it has one. */
export function linkByMac(mac: string, links: readonly KnownLink[]): string | undefined {
  const want = mac.toLowerCase();
  return (
    links.find((l) => l.spec.permanentAddr.toLowerCase() === want)?.name ??
    links.find((l) => l.spec.hardwareAddr.toLowerCase() === want)?.name
  );
}
