// The network resources' namespaces and the name tables: Talos's nethelpers names for
// the kernel's numbers (type "ether", flags "UP,BROADCAST", family "inet4", ...), the one
// place that maps between them (the controllers use them to build specs, the codecs to
// turn names back into the proto enums' numbers).

import { InvalidInputError } from "../../../errors.js";

export const NETWORK_NAMESPACE = "network";
export const NETWORK_CONFIG_NAMESPACE = "network-config";

// ---------------------------------------------------------------------------
// Name tables (Talos nethelpers names; values are the kernel's numbers).

const linkTypeNames: Record<number, string> = {
  0: "netrom",
  1: "ether",
  2: "eether",
  3: "ax25",
  4: "pronet",
  5: "chaos",
  6: "ieee802",
  7: "arcnet",
  8: "atalk",
  15: "dlci",
  19: "atm",
  23: "metricom",
  24: "ieee1394",
  27: "eui64",
  32: "infiniband",
  256: "slip",
  257: "cslip",
  258: "slip6",
  259: "cslip6",
  260: "rsrvd",
  264: "adapt",
  270: "rose",
  271: "x25",
  272: "hwx25",
  280: "can",
  512: "ppp",
  513: "cisco",
  516: "lapb",
  517: "ddcmp",
  518: "rawhdlc",
  768: "ipip",
  769: "tunnel6",
  770: "frad",
  771: "skip",
  772: "loopback",
  773: "localtlk",
  774: "fddi",
  775: "bif",
  776: "sit",
  777: "ip/ddp",
  778: "gre",
  779: "pimreg",
  780: "hippi",
  781: "ash",
  782: "econet",
  783: "irda",
  784: "fcpp",
  785: "fcal",
  786: "fcpl",
  800: "tr",
  801: "ieee802.11",
  802: "ieee802.11_prism",
  803: "ieee802.11_radiotap",
  804: "ieee802.15.4",
  805: "ieee802.15.4_monitor",
  820: "phonet",
  821: "phonet_pipe",
  822: "caif",
  823: "ip6gre",
  824: "netlink",
  825: "6lowpan",
  65534: "nohdr",
  65535: "void",
};
for (let i = 0; i <= 12; i++) linkTypeNames[787 + i] = `fcfb_${i}`;

/** IFF_* bit -> name, in bit order (Talos prints set flags in this order, comma-joined). */
const linkFlagNames = [
  "UP",
  "BROADCAST",
  "DEBUG",
  "LOOPBACK",
  "POINTTOPOINT",
  "NOTRAILERS",
  "RUNNING",
  "NOARP",
  "PROMISC",
  "ALLMULTI",
  "MASTER",
  "SLAVE",
  "MULTICAST",
  "PORTSEL",
  "AUTOMEDIA",
  "DYNAMIC",
  "LOWER_UP",
  "DORMANT",
  "ECHO",
];

const operStateNames = ["unknown", "notPresent", "down", "lowerLayerDown", "testing", "dormant", "up"];

const portNames: Record<number, string> = {
  0: "TwistedPair",
  1: "AUI",
  2: "MII",
  3: "Fibre",
  4: "BNC",
  5: "DirectAttach",
  239: "None",
  255: "Other",
};
const duplexNames: Record<number, string> = { 0: "Half", 1: "Full", 255: "Unknown" };
const familyNames: Record<number, string> = { 2: "inet4", 10: "inet6" };
const scopeNames: Record<number, string> = { 0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere" };
const tableNames: Record<number, string> = { 0: "unspec", 253: "default", 254: "main", 255: "local" };
const routeTypeNames = [
  "unspec",
  "unicast",
  "local",
  "broadcast",
  "anycast",
  "multicast",
  "blackhole",
  "unreachable",
  "prohibit",
  "throw",
  "nat",
  "xresolve",
];
const protocolNames: Record<number, string> = {
  0: "unspec",
  1: "redirect",
  2: "kernel",
  3: "boot",
  4: "static",
  9: "ra",
  10: "mrt",
  11: "zebra",
  12: "bird",
  13: "dnrouted",
  14: "xorp",
  15: "ntk",
  16: "dhcp",
  17: "mrtd",
  18: "keepalived",
  42: "babel",
  99: "openr",
  186: "bgp",
  187: "isis",
  188: "ospf",
  189: "rip",
  192: "eigrp",
};
/** RTM_F_* flags Talos names (bits 8..15). */
const routeFlagNames: Record<number, string> = {
  0x100: "notify",
  0x200: "cloned",
  0x400: "equalize",
  0x800: "prefix",
  0x1000: "lookup_table",
  0x2000: "fib_match",
  0x4000: "offload",
  0x8000: "trap",
};
const addressFlagNames = [
  "temporary",
  "nodad",
  "optimistic",
  "dadfailed",
  "homeaddress",
  "deprecated",
  "tentative",
  "permanent",
  "mngmtmpaddr",
  "noprefixroute",
  "mcautojoin",
  "stableprivacy",
];
const configLayerNames = ["default", "cmdline", "platform", "operator", "configuration"];

function invert(table: Record<number, string> | string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(table)) out[v] = Number(k);
  return out;
}

/** Go's fallback String() for values without a name: `Type(n)`. */
function named(table: Record<number, string> | string[], goType: string, v: number): string {
  return (table as Record<number, string>)[v] ?? `${goType}(${v})`;
}

function unnamed(inverse: Record<string, number>, goType: string, name: string): number {
  const v = inverse[name];
  if (v !== undefined) return v;
  const m = new RegExp(`^${goType}\\((\\d+)\\)$`).exec(name);
  if (m) return Number(m[1]);
  throw new InvalidInputError(`unknown ${goType} ${JSON.stringify(name)}`);
}

function flagsString(
  names: Record<number, string> | string[],
  bits: number,
  firstBit: number,
  lastBit: number,
): string {
  const out: string[] = [];
  for (let b = firstBit; b <= lastBit; b++) {
    const bit = 2 ** b;
    if (Math.floor(bits / bit) % 2 === 1) {
      const n = Array.isArray(names) ? names[b - firstBit] : names[bit];
      if (n) out.push(n);
    }
  }
  return out.join(",");
}

function flagsValue(names: Record<number, string> | string[], text: string, firstBit: number, what: string): number {
  if (text === "") return 0;
  let v = 0;
  for (const part of text.split(",")) {
    const idx = Array.isArray(names) ? names.indexOf(part) : -1;
    if (idx >= 0) {
      v += 2 ** (idx + firstBit);
      continue;
    }
    const entry = Array.isArray(names) ? undefined : Object.entries(names).find(([, n]) => n === part);
    if (!entry) throw new InvalidInputError(`unknown ${what} ${JSON.stringify(part)}`);
    v += Number(entry[0]);
  }
  return v;
}

const inverse = {
  linkType: invert(linkTypeNames),
  operState: invert(operStateNames),
  port: invert(portNames),
  duplex: invert(duplexNames),
  family: invert(familyNames),
  scope: invert(scopeNames),
  table: invert(tableNames),
  routeType: invert(routeTypeNames),
  protocol: invert(protocolNames),
  layer: invert(configLayerNames),
};

export const netNames = {
  linkType: (v: number) => named(linkTypeNames, "LinkType", v),
  linkFlags: (v: number) => flagsString(linkFlagNames, v, 0, 18),
  operState: (v: number) => named(operStateNames, "OperationalState", v),
  port: (v: number) => named(portNames, "Port", v),
  duplex: (v: number) => named(duplexNames, "Duplex", v),
  /** 4 or 6 (or AF_INET/AF_INET6) -> "inet4"/"inet6". */
  family: (v: number) => named(familyNames, "Family", v === 4 ? 2 : v === 6 ? 10 : v),
  scope: (v: number) => named(scopeNames, "Scope", v),
  table: (v: number) => named(tableNames, "RoutingTable", v),
  routeType: (v: number) => named(routeTypeNames, "RouteType", v),
  protocol: (v: number) => named(protocolNames, "RouteProtocol", v),
  routeFlags: (v: number) => flagsString(routeFlagNames, v, 8, 15),
  addressFlags: (v: number) => flagsString(addressFlagNames, v, 0, 11),
};

export const netValues = {
  linkType: (s: string) => unnamed(inverse.linkType, "LinkType", s),
  linkFlags: (s: string) => flagsValue(linkFlagNames, s, 0, "link flag"),
  operState: (s: string) => unnamed(inverse.operState, "OperationalState", s),
  port: (s: string) => unnamed(inverse.port, "Port", s),
  duplex: (s: string) => unnamed(inverse.duplex, "Duplex", s),
  family: (s: string) => unnamed(inverse.family, "Family", s),
  scope: (s: string) => unnamed(inverse.scope, "Scope", s),
  table: (s: string) => unnamed(inverse.table, "RoutingTable", s),
  routeType: (s: string) => unnamed(inverse.routeType, "RouteType", s),
  protocol: (s: string) => unnamed(inverse.protocol, "RouteProtocol", s),
  routeFlags: (s: string) => flagsValue(routeFlagNames, s, 8, "route flag"),
  addressFlags: (s: string) => flagsValue(addressFlagNames, s, 0, "address flag"),
  layer: (s: string) => unnamed(inverse.layer, "ConfigLayer", s),
};

export type ConfigLayer = "default" | "cmdline" | "platform" | "operator" | "configuration";

/** Layer precedence: a higher layer wins in merges. */
export function layerRank(layer: ConfigLayer): number {
  return configLayerNames.indexOf(layer);
}

/** "aa:bb:cc" -> bytes ("" -> empty). */
export function hwAddrBytes(s: string): Buffer {
  if (s === "") return Buffer.alloc(0);
  return Buffer.from(s.split(":").map((h) => parseInt(h, 16)));
}
