// Namespace `network` (and `network-config`): link, address, route, node address,
// hostname, resolver and time server resources, shaped as Talos prints them. Specs
// hold Talos's YAML names (type "ether", flags "UP,BROADCAST", family "inet4", ...);
// toProto turns them into the talos.resource.definitions.enums numbers, IPs into
// common.NetIP/NetIPPrefix. The name tables below are the single place that maps
// kernel numbers to those names (controllers use them to build specs).

import { InvalidInputError } from "../../errors.js";
import { netIP, netIPPrefix } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import type { BondOptions } from "../../sys/net.js";

export const NETWORK_NAMESPACE = "network";
export const NETWORK_CONFIG_NAMESPACE = "network-config";

// ---------------------------------------------------------------------------
// Name tables (Talos nethelpers names; values are the kernel's numbers).

const linkTypeNames: Record<number, string> = {
  0: "netrom", 1: "ether", 2: "eether", 3: "ax25", 4: "pronet", 5: "chaos", 6: "ieee802", 7: "arcnet",
  8: "atalk", 15: "dlci", 19: "atm", 23: "metricom", 24: "ieee1394", 27: "eui64", 32: "infiniband",
  256: "slip", 257: "cslip", 258: "slip6", 259: "cslip6", 260: "rsrvd", 264: "adapt", 270: "rose",
  271: "x25", 272: "hwx25", 280: "can", 512: "ppp", 513: "cisco", 516: "lapb", 517: "ddcmp",
  518: "rawhdlc", 768: "ipip", 769: "tunnel6", 770: "frad", 771: "skip", 772: "loopback",
  773: "localtlk", 774: "fddi", 775: "bif", 776: "sit", 777: "ip/ddp", 778: "gre", 779: "pimreg",
  780: "hippi", 781: "ash", 782: "econet", 783: "irda", 784: "fcpp", 785: "fcal", 786: "fcpl",
  800: "tr", 801: "ieee802.11", 802: "ieee802.11_prism", 803: "ieee802.11_radiotap",
  804: "ieee802.15.4", 805: "ieee802.15.4_monitor", 820: "phonet", 821: "phonet_pipe", 822: "caif",
  823: "ip6gre", 824: "netlink", 825: "6lowpan", 65534: "nohdr", 65535: "void",
};
for (let i = 0; i <= 12; i++) linkTypeNames[787 + i] = `fcfb_${i}`;

/** IFF_* bit -> name, in bit order (Talos prints set flags in this order, comma-joined). */
const linkFlagNames = [
  "UP", "BROADCAST", "DEBUG", "LOOPBACK", "POINTTOPOINT", "NOTRAILERS", "RUNNING", "NOARP", "PROMISC",
  "ALLMULTI", "MASTER", "SLAVE", "MULTICAST", "PORTSEL", "AUTOMEDIA", "DYNAMIC", "LOWER_UP", "DORMANT", "ECHO",
];

const operStateNames = ["unknown", "notPresent", "down", "lowerLayerDown", "testing", "dormant", "up"];

const portNames: Record<number, string> = { 0: "TwistedPair", 1: "AUI", 2: "MII", 3: "Fibre", 4: "BNC", 5: "DirectAttach", 239: "None", 255: "Other" };
const duplexNames: Record<number, string> = { 0: "Half", 1: "Full", 255: "Unknown" };
const familyNames: Record<number, string> = { 2: "inet4", 10: "inet6" };
const scopeNames: Record<number, string> = { 0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere" };
const tableNames: Record<number, string> = { 0: "unspec", 253: "default", 254: "main", 255: "local" };
const routeTypeNames = ["unspec", "unicast", "local", "broadcast", "anycast", "multicast", "blackhole", "unreachable", "prohibit", "throw", "nat", "xresolve"];
const protocolNames: Record<number, string> = {
  0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird",
  13: "dnrouted", 14: "xorp", 15: "ntk", 16: "dhcp", 17: "mrtd", 18: "keepalived", 42: "babel", 99: "openr",
  186: "bgp", 187: "isis", 188: "ospf", 189: "rip", 192: "eigrp",
};
/** RTM_F_* flags Talos names (bits 8..15). */
const routeFlagNames: Record<number, string> = {
  0x100: "notify", 0x200: "cloned", 0x400: "equalize", 0x800: "prefix", 0x1000: "lookup_table", 0x2000: "fib_match", 0x4000: "offload", 0x8000: "trap",
};
const addressFlagNames = [
  "temporary", "nodad", "optimistic", "dadfailed", "homeaddress", "deprecated", "tentative", "permanent",
  "mngmtmpaddr", "noprefixroute", "mcautojoin", "stableprivacy",
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

function flagsString(names: Record<number, string> | string[], bits: number, firstBit: number, lastBit: number): string {
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

// ---------------------------------------------------------------------------
// IDs (as Talos builds them).

export function addressId(linkName: string, prefix: string): string {
  return `${linkName}/${prefix}`;
}

/** `[<table>/]<family>/[<link>/ for inet6]<gateway>/<dst>/<priority>` ("main" table left out). */
export function routeId(spec: Pick<RouteStatusSpec, "table" | "family" | "dst" | "gateway" | "priority" | "outLinkName">): string {
  let prefix = spec.table !== "main" ? `${spec.table}/` : "";
  if (spec.family === "inet6") prefix += `${spec.outLinkName ?? ""}/`;
  return `${prefix}${spec.family}/${spec.gateway}/${spec.dst}/${spec.priority}`;
}

// ---------------------------------------------------------------------------
// LinkStatuses.net.talos.dev (id = link name)

export const LinkStatusType = "LinkStatuses.net.talos.dev";
/** Key order is Talos's YAML order; optional keys are Go `omitempty` fields. */
export interface LinkStatusSpec {
  index: number;
  type: string;
  linkIndex: number;
  flags: string;
  hardwareAddr: string;
  permanentAddr: string;
  broadcastAddr: string;
  mtu: number;
  queueDisc: string;
  masterIndex?: number;
  operationalState: string;
  kind: string;
  slaveKind: string;
  busPath?: string;
  pciID?: string;
  driver?: string;
  driverVersion?: string;
  firmwareVersion?: string;
  productID?: string;
  vendorID?: string;
  product?: string;
  vendor?: string;
  linkState: boolean;
  speedMbit?: number;
  port: string;
  duplex: string;
  vlan?: { vlanID: number; vlanProtocol: string };
  bridgeMaster?: { stp: { enabled: boolean } };
  bondMaster?: BondMasterSpec;
}

export const linkStatusDefinition = defineResource<LinkStatusSpec>({
  type: LinkStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["link", "links"],
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "Kind", jsonPath: "{.kind}" },
    { name: "Hw Addr", jsonPath: "{.hardwareAddr}" },
    { name: "Oper State", jsonPath: "{.operationalState}" },
    { name: "Link State", jsonPath: "{.linkState}" },
  ],
  protoSpecType: "talos.resource.definitions.network.LinkStatusSpec",
  toProto: (s) => ({
    index: s.index,
    type: netValues.linkType(s.type),
    link_index: s.linkIndex,
    flags: netValues.linkFlags(s.flags),
    hardware_addr: hwAddrBytes(s.hardwareAddr),
    permanent_addr: hwAddrBytes(s.permanentAddr),
    broadcast_addr: hwAddrBytes(s.broadcastAddr),
    mtu: s.mtu,
    queue_disc: s.queueDisc,
    master_index: s.masterIndex ?? 0,
    operational_state: netValues.operState(s.operationalState),
    kind: s.kind,
    slave_kind: s.slaveKind,
    bus_path: s.busPath ?? "",
    pciid: s.pciID ?? "",
    driver: s.driver ?? "",
    driver_version: s.driverVersion ?? "",
    firmware_version: s.firmwareVersion ?? "",
    product_id: s.productID ?? "",
    vendor_id: s.vendorID ?? "",
    product: s.product ?? "",
    vendor: s.vendor ?? "",
    link_state: s.linkState,
    speed_megabits: s.speedMbit ?? 0,
    port: netValues.port(s.port),
    duplex: netValues.duplex(s.duplex),
    ...(s.vlan ? { vlan: { vid: s.vlan.vlanID, protocol: VLAN_PROTOCOLS[s.vlan.vlanProtocol] ?? 0 } } : {}),
    ...(s.bridgeMaster ? { bridge_master: { stp: { enabled: s.bridgeMaster.stp.enabled } } } : {}),
    // The kernel may hold a value Talos has no name for; its number travels as it is.
    ...(s.bondMaster ? { bond_master: bondMasterProto(s.bondMaster, (option, name) => bondNameIndex(option, name) ?? (Number(name) || 0)) } : {}),
  }),
});

// ---------------------------------------------------------------------------
// AddressStatuses.net.talos.dev (id = <link>/<prefix>)

export const AddressStatusType = "AddressStatuses.net.talos.dev";
export interface AddressStatusSpec {
  address: string;
  local?: string;
  broadcast?: string;
  anycast?: string;
  multicast?: string;
  linkIndex: number;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
}

export const addressStatusDefinition = defineResource<AddressStatusSpec>({
  type: AddressStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["address", "addresses"],
  printColumns: [
    { name: "Address", jsonPath: "{.address}" },
    { name: "Link", jsonPath: "{.linkName}" },
  ],
  protoSpecType: "talos.resource.definitions.network.AddressStatusSpec",
  toProto: (s) => ({
    address: netIPPrefix(s.address),
    local: netIP(s.local ?? ""),
    broadcast: netIP(s.broadcast ?? ""),
    anycast: netIP(s.anycast ?? ""),
    multicast: netIP(s.multicast ?? ""),
    link_index: s.linkIndex,
    link_name: s.linkName,
    family: netValues.family(s.family),
    scope: netValues.scope(s.scope),
    flags: netValues.addressFlags(s.flags),
  }),
});

// ---------------------------------------------------------------------------
// RouteStatuses.net.talos.dev (id = routeId())

export const RouteStatusType = "RouteStatuses.net.talos.dev";
export interface RouteStatusSpec {
  family: string;
  /** Prefix, "" for a default route (Go's zero netip.Prefix). */
  dst: string;
  src: string;
  gateway: string;
  outLinkIndex?: number;
  outLinkName?: string;
  table: string;
  priority: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  mtu?: number;
}

export const routeStatusDefinition = defineResource<RouteStatusSpec>({
  type: RouteStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["route", "routes"],
  printColumns: [
    { name: "Destination", jsonPath: "{.dst}" },
    { name: "Gateway", jsonPath: "{.gateway}" },
    { name: "Link", jsonPath: "{.outLinkName}" },
    { name: "Metric", jsonPath: "{.priority}" },
  ],
  protoSpecType: "talos.resource.definitions.network.RouteStatusSpec",
  toProto: (s) => ({
    family: netValues.family(s.family),
    destination: netIPPrefix(s.dst),
    source: netIP(s.src),
    gateway: netIP(s.gateway),
    out_link_index: s.outLinkIndex ?? 0,
    out_link_name: s.outLinkName ?? "",
    table: netValues.table(s.table),
    priority: s.priority,
    scope: netValues.scope(s.scope),
    type: netValues.routeType(s.type),
    flags: netValues.routeFlags(s.flags),
    protocol: netValues.protocol(s.protocol),
    mtu: s.mtu ?? 0,
  }),
});

// ---------------------------------------------------------------------------
// NodeAddresses.net.talos.dev (ids default, current, accumulative, routed)

export const NodeAddressType = "NodeAddresses.net.talos.dev";
export const NodeAddressIds = { default: "default", current: "current", accumulative: "accumulative", routed: "routed" } as const;
export interface NodeAddressSpec {
  addresses: string[];
}

export const nodeAddressDefinition = defineResource<NodeAddressSpec>({
  type: NodeAddressType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [{ name: "Addresses", jsonPath: "{.addresses}" }],
  protoSpecType: "talos.resource.definitions.network.NodeAddressSpec",
  toProto: (s) => ({ addresses: s.addresses.map(netIPPrefix) }),
});

/** The id of a NodeAddress kind narrowed by a NodeAddressFilter ("current" + "no-k8s" -> "current-no-k8s"). */
export const filteredNodeAddressId = (kind: string, filterId: string): string => `${kind}-${filterId}`;

// ---------------------------------------------------------------------------
// NodeAddressFilters.net.talos.dev (ids no-k8s, only-k8s)

export const NodeAddressFilterType = "NodeAddressFilters.net.talos.dev";
export const NodeAddressFilterIds = { noK8s: "no-k8s", onlyK8s: "only-k8s" } as const;
export interface NodeAddressFilterSpec {
  /** An address is kept only if one of these holds it (when not empty). */
  includeSubnets: string[];
  /** An address one of these holds is dropped. */
  excludeSubnets: string[];
}

export const nodeAddressFilterDefinition = defineResource<NodeAddressFilterSpec>({
  type: NodeAddressFilterType,
  defaultNamespace: NETWORK_NAMESPACE,
  printColumns: [
    { name: "Include Subnets", jsonPath: "{.includeSubnets}" },
    { name: "Exclude Subnets", jsonPath: "{.excludeSubnets}" },
  ],
  protoSpecType: "talos.resource.definitions.network.NodeAddressFilterSpec",
  toProto: (s) => ({ include_subnets: s.includeSubnets.map(netIPPrefix), exclude_subnets: s.excludeSubnets.map(netIPPrefix) }),
});

// ---------------------------------------------------------------------------
// HostnameStatuses / ResolverStatuses / TimeServerStatuses (single ids)

export const HostnameStatusType = "HostnameStatuses.net.talos.dev";
export const HostnameStatusId = "hostname";
export interface HostnameStatusSpec {
  hostname: string;
  domainname: string;
}

export const hostnameStatusDefinition = defineResource<HostnameStatusSpec>({
  type: HostnameStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["hostname"],
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Domainname", jsonPath: "{.domainname}" },
  ],
  protoSpecType: "talos.resource.definitions.network.HostnameStatusSpec",
  toProto: (s) => ({ hostname: s.hostname, domainname: s.domainname }),
});

export const ResolverStatusType = "ResolverStatuses.net.talos.dev";
export const ResolverStatusId = "resolvers";
export interface ResolverStatusSpec {
  dnsServers: string[];
}

export const resolverStatusDefinition = defineResource<ResolverStatusSpec>({
  type: ResolverStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["resolvers"],
  printColumns: [{ name: "Resolvers", jsonPath: "{.dnsServers}" }],
  protoSpecType: "talos.resource.definitions.network.ResolverStatusSpec",
  toProto: (s) => ({ dns_servers: s.dnsServers.map(netIP) }),
});

export const TimeServerStatusType = "TimeServerStatuses.net.talos.dev";
export const TimeServerStatusId = "timeservers";
export interface TimeServerStatusSpec {
  timeServers: string[];
}

export const timeServerStatusDefinition = defineResource<TimeServerStatusSpec>({
  type: TimeServerStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["timeserver", "timeservers"],
  printColumns: [{ name: "Timeservers", jsonPath: "{.timeServers}" }],
  protoSpecType: "talos.resource.definitions.network.TimeServerStatusSpec",
  toProto: (s) => ({ ntp_servers: s.timeServers }),
});

// ---------------------------------------------------------------------------
// NetworkStatuses.net.talos.dev (id "status"): readiness summary.

export const NetworkStatusType = "NetworkStatuses.net.talos.dev";
export const NetworkStatusId = "status";
export interface NetworkStatusSpec {
  addressReady: boolean;
  connectivityReady: boolean;
  hostnameReady: boolean;
  etcFilesReady: boolean;
}

export const networkStatusDefinition = defineResource<NetworkStatusSpec>({
  type: NetworkStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["netstatus", "netstatuses"],
  printColumns: [
    { name: "Address", jsonPath: "{.addressReady}" },
    { name: "Connectivity", jsonPath: "{.connectivityReady}" },
    { name: "Hostname", jsonPath: "{.hostnameReady}" },
    { name: "Etc", jsonPath: "{.etcFilesReady}" },
  ],
  protoSpecType: "talos.resource.definitions.network.StatusSpec",
  toProto: (s) => ({
    address_ready: s.addressReady,
    connectivity_ready: s.connectivityReady,
    hostname_ready: s.hostnameReady,
    etc_files_ready: s.etcFilesReady,
  }),
});

// ---------------------------------------------------------------------------
// Per-layer specs in `network-config` that operators (DHCP) and defaults write and
// the status controllers merge (ids `<layer>/<what>` or `dhcp4/<link>/<what>`).

export const HostnameSpecType = "HostnameSpecs.net.talos.dev";
export interface HostnameSpecSpec {
  hostname: string;
  domainname: string;
  layer: ConfigLayer;
}
export const hostnameSpecDefinition = defineResource<HostnameSpecSpec>({
  type: HostnameSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.HostnameSpecSpec",
  toProto: (s) => ({ hostname: s.hostname, domainname: s.domainname, config_layer: netValues.layer(s.layer) }),
});

export const ResolverSpecType = "ResolverSpecs.net.talos.dev";
export interface ResolverSpecSpec {
  dnsServers: string[];
  layer: ConfigLayer;
}
export const resolverSpecDefinition = defineResource<ResolverSpecSpec>({
  type: ResolverSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.ResolverSpecSpec",
  toProto: (s) => ({ dns_servers: s.dnsServers.map(netIP), config_layer: netValues.layer(s.layer) }),
});

export const TimeServerSpecType = "TimeServerSpecs.net.talos.dev";
export interface TimeServerSpecSpec {
  timeServers: string[];
  layer: ConfigLayer;
}
export const timeServerSpecDefinition = defineResource<TimeServerSpecSpec>({
  type: TimeServerSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.TimeServerSpecSpec",
  toProto: (s) => ({ ntp_servers: s.timeServers, config_layer: netValues.layer(s.layer) }),
});

// ---------------------------------------------------------------------------
// AddressSpecs / RouteSpecs / LinkSpecs: per layer in `network-config` (ids
// `<layer>/<id>`, or `<operator>/<link>/<id>` for operators), merged into `network`
// (plain ids) by the merge controllers; the spec controllers apply the merged ones.

/** Bond option names (Talos nethelpers) -> the kernel's numbers. */
export const bondNames = {
  mode: ["balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"],
  xmitHashPolicy: ["layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4"],
  lacpRate: ["slow", "fast"],
  arpValidate: ["none", "active", "backup", "all"],
  arpAllTargets: ["any", "all"],
  primaryReselect: ["always", "better", "failure"],
  failOverMac: ["none", "active", "follow"],
  adSelect: ["stable", "bandwidth", "count"],
} as const;
export type BondOptionName = keyof typeof bondNames;

/** The kernel number of a bond option's name; InvalidInputError for a name Talos does not know. */
export function bondValue(option: BondOptionName, name: string): number {
  const i = bondNameIndex(option, name);
  if (i === undefined) throw new InvalidInputError(`unknown bond ${option} ${JSON.stringify(name)}`, { option, value: name });
  return i;
}

function bondNameIndex(option: BondOptionName, name: string): number | undefined {
  const i = (bondNames[option] as readonly string[]).indexOf(name);
  return i < 0 ? undefined : i;
}

/**
 * A bond's settings as the kernel reports them, in Talos's BondMasterSpec YAML: names for
 * the enumerations (a number Talos has no name for as its digits), omitempty fields left
 * out when zero. primaryIndex: the primary member's index, 0 for none.
 */
export function bondMasterSpec(o: BondOptions, primaryIndex: number): BondMasterSpec {
  const name = (option: BondOptionName, n: number) => bondNames[option][n] ?? String(n);
  const spec: Record<string, unknown> = {
    mode: name("mode", o.mode),
    xmitHashPolicy: name("xmitHashPolicy", o.xmitHashPolicy),
    lacpRate: name("lacpRate", o.lacpRate),
    arpValidate: name("arpValidate", o.arpValidate),
    arpAllTargets: name("arpAllTargets", o.arpAllTargets),
    primary: primaryIndex,
    primaryReselect: name("primaryReselect", o.primaryReselect),
    failOverMac: name("failOverMac", o.failOverMac),
    adSelect: o.adSelect === 0 ? undefined : name("adSelect", o.adSelect),
  };
  const counts = ["miimon", "updelay", "downdelay", "arpInterval", "resendIgmp", "minLinks", "lpInterval", "packetsPerSlave", "numPeerNotif"] as const;
  for (const k of counts) spec[k] = o[k];
  Object.assign(spec, { tlbLogicalLb: o.tlbDynamicLb, allSlavesActive: o.allSlavesActive, useCarrier: o.useCarrier || undefined, adActorSysPrio: o.adActorSysPrio, adUserPortKey: o.adUserPortKey, peerNotifyDelay: o.peerNotifyDelay });
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) if (v !== undefined && v !== 0) out[k] = v;
  // Built key by key above from BondMasterSpec's own fields.
  return out as unknown as BondMasterSpec;
}

export const VLAN_PROTOCOLS: Record<string, number> = { "802.1q": 0x8100, "802.1ad": 0x88a8 };

export const AddressSpecType = "AddressSpecs.net.talos.dev";
export interface AddressSpecSpec {
  address: string;
  linkName: string;
  family: string;
  scope: string;
  flags: string;
  announceWithARP?: boolean;
  layer: ConfigLayer;
}
export const addressSpecDefinition = defineResource<AddressSpecSpec>({
  type: AddressSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.AddressSpecSpec",
  toProto: (s) => ({
    address: netIPPrefix(s.address),
    link_name: s.linkName,
    family: netValues.family(s.family),
    scope: netValues.scope(s.scope),
    flags: netValues.addressFlags(s.flags),
    announce_with_arp: s.announceWithARP ?? false,
    config_layer: netValues.layer(s.layer),
  }),
});

export const RouteSpecType = "RouteSpecs.net.talos.dev";
export interface RouteSpecSpec {
  family: string;
  dst: string;
  src: string;
  gateway: string;
  outLinkName?: string;
  table: string;
  priority?: number;
  scope: string;
  type: string;
  flags: string;
  protocol: string;
  layer: ConfigLayer;
  mtu?: number;
}
export const routeSpecDefinition = defineResource<RouteSpecSpec>({
  type: RouteSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.RouteSpecSpec",
  toProto: (s) => ({
    family: netValues.family(s.family),
    destination: netIPPrefix(s.dst),
    source: netIP(s.src),
    gateway: netIP(s.gateway),
    out_link_name: s.outLinkName ?? "",
    table: netValues.table(s.table),
    priority: s.priority ?? 0,
    scope: netValues.scope(s.scope),
    type: netValues.routeType(s.type),
    flags: netValues.routeFlags(s.flags),
    protocol: netValues.protocol(s.protocol),
    config_layer: netValues.layer(s.layer),
    mtu: s.mtu ?? 0,
  }),
});

export interface BondMasterSpec {
  mode: string;
  xmitHashPolicy: string;
  lacpRate: string;
  arpValidate: string;
  arpAllTargets: string;
  primary?: number;
  primaryReselect: string;
  failOverMac: string;
  adSelect?: string;
  miimon?: number;
  updelay?: number;
  downdelay?: number;
  arpInterval?: number;
  resendIgmp?: number;
  minLinks?: number;
  lpInterval?: number;
  packetsPerSlave?: number;
  numPeerNotif?: number;
  tlbLogicalLb?: number;
  allSlavesActive?: number;
  useCarrier?: boolean;
  adActorSysPrio?: number;
  adUserPortKey?: number;
  peerNotifyDelay?: number;
}

export const LinkSpecType = "LinkSpecs.net.talos.dev";
export interface LinkSpecSpec {
  name: string;
  logical: boolean;
  up: boolean;
  mtu: number;
  kind: string;
  type: string;
  parentName?: string;
  /** BondSlave, inline in Talos's YAML. */
  masterName?: string;
  slaveIndex?: number;
  bridgeSlave?: { masterName: string };
  vlan?: { vlanID: number; vlanProtocol: string };
  bondMaster?: BondMasterSpec;
  bridgeMaster?: { stp?: { enabled: boolean } };
  layer: ConfigLayer;
}
export const linkSpecDefinition = defineResource<LinkSpecSpec>({
  type: LinkSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.LinkSpecSpec",
  toProto: (s) => ({
    name: s.name,
    logical: s.logical,
    up: s.up,
    mtu: s.mtu,
    kind: s.kind,
    type: netValues.linkType(s.type),
    parent_name: s.parentName ?? "",
    bond_slave: { master_name: s.masterName ?? "", slave_index: s.slaveIndex ?? 0 },
    bridge_slave: { master_name: s.bridgeSlave?.masterName ?? "" },
    vlan: { vid: s.vlan?.vlanID ?? 0, protocol: VLAN_PROTOCOLS[s.vlan?.vlanProtocol ?? ""] ?? 0 },
    bond_master: s.bondMaster ? bondMasterProto(s.bondMaster) : {},
    bridge_master: { stp: { enabled: s.bridgeMaster?.stp?.enabled ?? false } },
    config_layer: netValues.layer(s.layer),
  }),
});

/** A bond spec in the kernel's numbers, every option present (zero where unset), as Talos's BondMasterSpec holds it. */
export function bondNumbers(b: BondMasterSpec, value: (option: BondOptionName, name: string) => number = bondValue): Omit<BondOptions, "primary"> {
  return {
    mode: value("mode", b.mode),
    xmitHashPolicy: value("xmitHashPolicy", b.xmitHashPolicy),
    lacpRate: value("lacpRate", b.lacpRate),
    arpValidate: value("arpValidate", b.arpValidate),
    arpAllTargets: value("arpAllTargets", b.arpAllTargets),
    primaryReselect: value("primaryReselect", b.primaryReselect),
    failOverMac: value("failOverMac", b.failOverMac),
    adSelect: value("adSelect", b.adSelect ?? "stable"),
    miimon: b.miimon ?? 0,
    updelay: b.updelay ?? 0,
    downdelay: b.downdelay ?? 0,
    arpInterval: b.arpInterval ?? 0,
    resendIgmp: b.resendIgmp ?? 0,
    minLinks: b.minLinks ?? 0,
    lpInterval: b.lpInterval ?? 0,
    packetsPerSlave: b.packetsPerSlave ?? 0,
    numPeerNotif: b.numPeerNotif ?? 0,
    tlbDynamicLb: b.tlbLogicalLb ?? 0,
    allSlavesActive: b.allSlavesActive ?? 0,
    useCarrier: b.useCarrier ?? false,
    adActorSysPrio: b.adActorSysPrio ?? 0,
    adUserPortKey: b.adUserPortKey ?? 0,
    peerNotifyDelay: b.peerNotifyDelay ?? 0,
  };
}

// BondMasterSpec's proto field names where they are not the option's name in snake case.
const bondProtoNames: Record<string, string> = { xmitHashPolicy: "hash_policy", miimon: "mii_mon", updelay: "up_delay", downdelay: "down_delay" };

function bondMasterProto(b: BondMasterSpec, value?: (option: BondOptionName, name: string) => number): Record<string, unknown> {
  const out: Record<string, unknown> = { primary_index: b.primary ?? 0 };
  for (const [k, v] of Object.entries(bondNumbers(b, value))) out[bondProtoNames[k] ?? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  return out;
}

export const OperatorSpecType = "OperatorSpecs.net.talos.dev";
export interface OperatorSpecSpec {
  operator: "dhcp4" | "dhcp6" | "vip";
  linkName: string;
  requireUp: boolean;
  dhcp4?: { routeMetric: number; skipHostnameRequest?: boolean };
  /** `DUID` is Talos's YAML key (hex, absent for the default). */
  dhcp6?: { DUID?: string; routeMetric: number; skipHostnameRequest?: boolean };
  /** A layer 2 shared address (the cloud providers' VIPs are not built). */
  vip?: { ip: string; gratuitousARP: boolean };
  layer: ConfigLayer;
}
const operatorNumbers = { dhcp4: 0, dhcp6: 1, vip: 2 } as const;
export const operatorSpecDefinition = defineResource<OperatorSpecSpec>({
  type: OperatorSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.OperatorSpecSpec",
  toProto: (s) => ({
    operator: operatorNumbers[s.operator],
    link_name: s.linkName,
    require_up: s.requireUp,
    dhcp4: { route_metric: s.dhcp4?.routeMetric ?? 0, skip_hostname_request: s.dhcp4?.skipHostnameRequest ?? false },
    dhcp6: { duid: s.dhcp6?.DUID ?? "", route_metric: s.dhcp6?.routeMetric ?? 0, skip_hostname_request: s.dhcp6?.skipHostnameRequest ?? false },
    ...(s.vip ? { vip: { ip: netIP(s.vip.ip), gratuitous_arp: s.vip.gratuitousARP } } : {}),
    config_layer: netValues.layer(s.layer),
  }),
});

export const networkDefinitions: readonly ResourceDefinition<never>[] = [
  linkStatusDefinition,
  addressStatusDefinition,
  routeStatusDefinition,
  nodeAddressDefinition,
  nodeAddressFilterDefinition,
  hostnameStatusDefinition,
  resolverStatusDefinition,
  timeServerStatusDefinition,
  networkStatusDefinition,
  hostnameSpecDefinition,
  resolverSpecDefinition,
  timeServerSpecDefinition,
  addressSpecDefinition,
  routeSpecDefinition,
  linkSpecDefinition,
  operatorSpecDefinition,
] as unknown as readonly ResourceDefinition<never>[];
