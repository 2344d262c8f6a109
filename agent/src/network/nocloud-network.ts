// A nocloud network-config (cloud-init's v1 or v2) as Talos 1.7's nocloud platform reads
// it, turned into platform-layer specs: links up (v2: MTU, bonds and their members),
// static addresses, gateways and routes, DHCPv4/DHCPv6 operators and DNS servers.
// Links named by MAC address are matched against the node's links (permanent address)
// when the specs are built, so the specs follow links that appear later.

import { isIP } from "node:net";
import { parse } from "yaml";
import { InvalidInputError } from "../errors.js";
import { ipBytes } from "../resources/codec.js";
import {
  type AddressSpecSpec,
  type BondMasterSpec,
  type LinkSpecSpec,
  type OperatorSpecSpec,
  type RouteSpecSpec,
  bondValue,
  netNames,
} from "../resources/catalog/network.js";
import { DEFAULT_ROUTE_METRIC, type KnownLink } from "./config-specs.js";
import { withBondDefaults } from "./bond-defaults.js";

interface V1Subnet {
  type: string;
  address: string;
  netmask: string;
  gateway: string;
}

interface V1Entry {
  type: string;
  name: string;
  mac: string;
  subnets: V1Subnet[];
  /** `nameserver` entries' servers. */
  address: string[];
}

interface V2Ethernet {
  mac: string;
  dhcp4: boolean;
  dhcp6: boolean;
  addresses: string[];
  gateway4: string;
  gateway6: string;
  mtu: number;
  nameservers: string[];
  routes: { to: string; via: string; table: number }[];
}

interface V2Bond extends V2Ethernet {
  interfaces: string[];
  mode: string;
  lacpRate: string;
  hashPolicy: string;
  miimon: number;
  updelay: number;
  downdelay: number;
}

export type NocloudNetworkConfig =
  | { version: 1; config: V1Entry[] }
  | { version: 2; ethernets: [string, V2Ethernet][]; bonds: [string, V2Bond][] };

export interface PlatformNetworkSpecs {
  addresses: AddressSpecSpec[];
  links: LinkSpecSpec[];
  routes: RouteSpecSpec[];
  operators: OperatorSpecSpec[];
  dnsServers: string[];
}

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === "object" && v !== null && !Array.isArray(v);

function bad(what: string, value: unknown): InvalidInputError {
  return new InvalidInputError(`network-config: ${what}: ${JSON.stringify(value)}`, { value });
}

function str(d: Doc, key: string): string {
  const v = d[key];
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  throw bad(`${key} is not a string`, v);
}

function num(d: Doc, key: string): number {
  const v = d[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw bad(`${key} is not a number`, v);
  return v;
}

function bool(d: Doc, key: string): boolean {
  const v = d[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw bad(`${key} is not true or false`, v);
  return v;
}

function list(d: Doc, key: string): unknown[] {
  const v = d[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw bad(`${key} is not a list`, v);
  return v;
}

const strList = (d: Doc, key: string): string[] => list(d, key).map((x) => str({ x }, "x"));
const docs = (d: Doc, key: string): Doc[] =>
  list(d, key).map((x) => {
    if (!isDoc(x)) throw bad(`an entry of ${key} is not a mapping`, x);
    return x;
  });
const sub = (d: Doc, key: string): Doc => (isDoc(d[key]) ? d[key] : {});

function ethernet(d: Doc): V2Ethernet {
  return {
    mac: str(sub(d, "match"), "macaddress"),
    dhcp4: bool(d, "dhcp4"),
    dhcp6: bool(d, "dhcp6"),
    addresses: strList(d, "addresses"),
    gateway4: str(d, "gateway4"),
    gateway6: str(d, "gateway6"),
    mtu: num(d, "mtu"),
    nameservers: strList(sub(d, "nameservers"), "addresses"),
    routes: docs(d, "routes").map((r) => ({ to: str(r, "to"), via: str(r, "via"), table: num(r, "table") })),
  };
}

function sections<T>(d: Doc, key: string, read: (v: Doc) => T): [string, T][] {
  const v = d[key];
  if (v === undefined || v === null) return [];
  if (!isDoc(v)) throw bad(`${key} is not a mapping`, v);
  return Object.entries(v).map(([name, x]) => [name, read(isDoc(x) ? x : {})]);
}

/**
 * The network-config's text (with or without cloud-init's top-level `network:`), checked:
 * a value of the wrong kind, an address that does not parse or an unknown bond option
 * fails here, before anything is published. Undefined for no text.
 */
export function parseNocloudNetwork(text: string | undefined): NocloudNetworkConfig | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new InvalidInputError("network-config is not valid YAML", {}, { cause: err });
  }
  const doc = isDoc(raw) && isDoc(raw["network"]) ? raw["network"] : raw;
  if (!isDoc(doc)) throw new InvalidInputError("network-config is not a YAML mapping");
  let config: NocloudNetworkConfig;
  if (doc["version"] === 1) {
    config = {
      version: 1,
      config: docs(doc, "config").map((e) => ({
        type: str(e, "type"),
        name: str(e, "name"),
        mac: str(e, "mac_address"),
        address: strList(e, "address"),
        subnets: docs(e, "subnets").map((s) => ({
          type: str(s, "type"),
          address: str(s, "address"),
          netmask: str(s, "netmask"),
          gateway: str(s, "gateway"),
        })),
      })),
    };
  } else if (doc["version"] === 2) {
    config = {
      version: 2,
      ethernets: sections(doc, "ethernets", ethernet),
      bonds: sections(doc, "bonds", (b) => {
        const p = sub(b, "parameters");
        return {
          ...ethernet(b),
          interfaces: strList(b, "interfaces"),
          mode: str(p, "mode"),
          lacpRate: str(p, "lacp-rate"),
          hashPolicy: str(p, "transmit-hash-policy"),
          miimon: num(p, "mii-monitor-interval"),
          updelay: num(p, "up-delay"),
          downdelay: num(p, "down-delay"),
        };
      }),
    };
  } else {
    throw new InvalidInputError(`network-config metadata version=${String(doc["version"])} is not supported`, {
      version: doc["version"],
    });
  }
  nocloudNetworkSpecs(config, []);
  return config;
}

function ip(text: string): string {
  if (isIP(text) === 0) throw bad("not an IP address", text);
  return text;
}

function prefix(text: string): { address: string; family: "inet4" | "inet6"; bits: number } {
  const slash = text.lastIndexOf("/");
  const addr = slash < 0 ? text : text.slice(0, slash);
  const version = isIP(addr);
  const bits = slash < 0 ? Number.NaN : Number(text.slice(slash + 1));
  if (
    version === 0 ||
    !Number.isInteger(bits) ||
    bits < 0 ||
    bits > (version === 4 ? 32 : 128) ||
    !/^\d+$/.test(text.slice(slash + 1))
  )
    throw bad("not an IP prefix", text);
  return { address: addr, family: version === 4 ? "inet4" : "inet6", bits };
}

/** A netmask's length (255.255.255.0 -> 24, ffff:ffff:: -> 32); a mask with holes is refused. */
function maskBits(mask: string): number {
  if (isIP(mask) === 0) throw bad("not a netmask", mask);
  const bitsText = [...ipBytes(mask)].map((b) => b.toString(2).padStart(8, "0")).join("");
  if (!/^1*0*$/.test(bitsText)) throw bad("not a netmask", mask);
  return bitsText.indexOf("0") < 0 ? bitsText.length : bitsText.indexOf("0");
}

/** A v1 subnet's address: CIDR text, or an address with its netmask. */
function subnetPrefix(s: V1Subnet): { address: string; family: "inet4" | "inet6"; bits: number } {
  if (s.address.includes("/")) return prefix(s.address);
  const addr = ip(s.address);
  return { address: addr, family: isIP(addr) === 4 ? "inet4" : "inet6", bits: maskBits(s.netmask) };
}

function address(linkName: string, p: { address: string; family: "inet4" | "inet6"; bits: number }): AddressSpecSpec {
  return {
    address: `${p.address}/${p.bits}`,
    linkName,
    family: p.family,
    scope: "global",
    flags: "permanent",
    layer: "platform",
  };
}

function route(linkName: string, gateway: string, dst = "", table = "main"): RouteSpecSpec {
  const family = gateway.includes(":") ? "inet6" : "inet4";
  return {
    family,
    dst,
    src: "",
    gateway,
    outLinkName: linkName,
    table,
    priority: family === "inet6" ? 2 * DEFAULT_ROUTE_METRIC : DEFAULT_ROUTE_METRIC,
    scope: "global",
    type: "unicast",
    flags: "",
    protocol: "static",
    layer: "platform",
  };
}

const dhcp4 = (linkName: string): OperatorSpecSpec => ({
  operator: "dhcp4",
  linkName,
  requireUp: true,
  dhcp4: { routeMetric: DEFAULT_ROUTE_METRIC },
  layer: "platform",
});
const dhcp6 = (linkName: string, routeMetric: number): OperatorSpecSpec => ({
  operator: "dhcp6",
  linkName,
  requireUp: true,
  dhcp6: { routeMetric },
  layer: "platform",
});

/** The link a MAC address names (by permanent address), else the name the config gives. */
function linkByMac(mac: string, fallback: string, links: readonly KnownLink[]): string {
  if (!mac) return fallback;
  return links.find((l) => l.spec.permanentAddr.toLowerCase() === mac.toLowerCase())?.name ?? fallback;
}

function v1Specs(entries: V1Entry[], links: readonly KnownLink[], out: PlatformNetworkSpecs): void {
  for (const e of entries) {
    if (e.type === "nameserver") {
      out.dnsServers.push(...e.address.map(ip));
      continue;
    }
    // bond, vlan, route entries: not read by Talos 1.7's nocloud either.
    if (e.type !== "physical") continue;
    const name = linkByMac(e.mac, e.name, links);
    out.links.push({ name, logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "platform" });
    for (const s of e.subnets) {
      if (s.type === "dhcp" || s.type === "dhcp4") out.operators.push(dhcp4(name));
      else if (s.type === "ipv6_dhcpv6-stateful") out.operators.push(dhcp6(name, 2 * DEFAULT_ROUTE_METRIC));
      else if (s.type === "static" || s.type === "static6") {
        out.addresses.push(address(name, subnetPrefix(s)));
        if (s.gateway) out.routes.push(route(name, ip(s.gateway)));
      }
    }
  }
}

function v2Ethernet(name: string, eth: V2Ethernet, out: PlatformNetworkSpecs): void {
  if (eth.dhcp4) out.operators.push(dhcp4(name));
  if (eth.dhcp6) out.operators.push(dhcp6(name, DEFAULT_ROUTE_METRIC));
  for (const a of eth.addresses) out.addresses.push(address(name, prefix(a)));
  if (eth.gateway4) out.routes.push(route(name, ip(eth.gateway4)));
  if (eth.gateway6) out.routes.push(route(name, ip(eth.gateway6)));
  out.dnsServers.push(...eth.nameservers.map(ip));
  for (const r of eth.routes) {
    const to = prefix(r.to);
    // A route's table 0 (none given) is the main table, where the kernel puts it.
    out.routes.push(
      route(
        name,
        ip(r.via),
        to.bits === 0 ? "" : `${to.address}/${to.bits}`,
        r.table ? netNames.table(r.table) : "main",
      ),
    );
  }
}

/** Talos's bond defaults beside the options network-config sets (its FillDefaults). */
function bondMaster(b: V2Bond): BondMasterSpec {
  const mode = b.mode || "balance-rr";
  const spec: BondMasterSpec = {
    mode,
    xmitHashPolicy: b.hashPolicy || "layer2",
    lacpRate: b.lacpRate || "slow",
    arpValidate: "none",
    arpAllTargets: "any",
    primaryReselect: "always",
    failOverMac: "none",
  };
  for (const k of ["mode", "xmitHashPolicy", "lacpRate"] as const) {
    try {
      bondValue(k, spec[k]);
    } catch (err) {
      throw new InvalidInputError(
        `network-config: invalid bond ${k} ${JSON.stringify(spec[k])}`,
        { value: spec[k] },
        { cause: err },
      );
    }
  }
  if (b.miimon) spec.miimon = b.miimon;
  if (b.updelay) spec.updelay = b.updelay;
  if (b.downdelay) spec.downdelay = b.downdelay;
  return withBondDefaults(spec);
}

function v2Specs(
  ethernets: [string, V2Ethernet][],
  bonds: [string, V2Bond][],
  links: readonly KnownLink[],
  out: PlatformNetworkSpecs,
): void {
  for (const [key, eth] of [...ethernets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const master = bonds.find(([, b]) => b.interfaces.includes(key))?.[0];
    const name = linkByMac(eth.mac, key, links);
    out.links.push({
      name,
      logical: false,
      up: true,
      mtu: eth.mtu,
      kind: "",
      type: "ether",
      ...(master ? { masterName: master, slaveIndex: 1 } : {}),
      layer: "platform",
    });
    v2Ethernet(name, eth, out);
  }
  for (const [name, bond] of bonds) {
    out.links.push({
      name,
      logical: true,
      up: true,
      mtu: bond.mtu,
      kind: "bond",
      type: "ether",
      bondMaster: bondMaster(bond),
      layer: "platform",
    });
    v2Ethernet(name, bond, out);
  }
}

/** The platform-layer specs of a network-config on a node with these links. */
export function nocloudNetworkSpecs(config: NocloudNetworkConfig, links: readonly KnownLink[]): PlatformNetworkSpecs {
  const out: PlatformNetworkSpecs = { addresses: [], links: [], routes: [], operators: [], dnsServers: [] };
  if (config.version === 1) v1Specs(config.config, links, out);
  else v2Specs(config.ethernets, config.bonds, links, out);
  return out;
}
