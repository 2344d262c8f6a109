// The narrow kernel networking interface: links, addresses, routes and change
// notifications, in the kernel's own numeric vocabulary (ARPHRD_*, IFF_*, IF_OPER_*,
// RT_SCOPE_*, RTN_*, RTPROT_*, table ids), so that the rtnetlink backend and the test
// fake fill it the same way. Mapping to Talos names lives above sys.

import { InvalidInputError } from "../errors.js";

export type IpFamily = 4 | 6;

/** What changed; watchers re-list what they care about. */
export type NetChange = "link" | "address" | "route";

export interface KernelLink {
  index: number;
  name: string;
  /** ARPHRD_* (1 ether, 772 loopback, 65534 none). */
  type: number;
  /** IFF_* bits as the kernel reports them (RUNNING, LOWER_UP and DORMANT included). */
  flags: number;
  mtu: number;
  /** "aa:bb:cc:dd:ee:ff", or "" when the link has none. */
  hardwareAddr: string;
  broadcastAddr: string;
  /** Permanent (burnt-in) address; equals hardwareAddr when the kernel reports none. */
  permanentAddr: string;
  /** IF_OPER_* (RFC 2863): 0 unknown, 1 notpresent, 2 down, 3 lowerlayerdown, 4 testing, 5 dormant, 6 up. */
  operState: number;
  /** rtnl link kind ("veth", "bond", "vlan", ...); "" for plain devices. */
  kind: string;
  slaveKind: string;
  masterIndex: number;
  /** Parent (vlan) or peer (veth) index; 0 when none. */
  linkIndex: number;
  /** 802.1Q id and protocol (0x8100, 0x88a8) of a vlan link; 0 otherwise. */
  vlanId: number;
  vlanProtocol: number;
  queueDisc: string;
  /** Carrier present (IFF_LOWER_UP). */
  carrier: boolean;
  /** A bond's settings as the kernel reports them (its primary: the member's name, when one is enslaved as primary). */
  bond?: BondOptions;
  /** A bridge's settings as the kernel reports them. */
  bridge?: Required<BridgeOptions>;
}

export interface KernelAddress {
  linkIndex: number;
  linkName: string;
  family: IpFamily;
  /** IFA_ADDRESS without the prefix length. */
  address: string;
  prefixLen: number;
  /** IFA_LOCAL, "" when absent. */
  local: string;
  broadcast: string;
  /** RT_SCOPE_* (0 global, 253 link, 254 host). */
  scope: number;
  /** IFA_F_* bits. */
  flags: number;
}

export interface KernelRoute {
  family: IpFamily;
  /** Routing table id (254 main, 255 local). */
  table: number;
  /** Destination network address; "" with dstLen 0 for a default route. */
  dst: string;
  dstLen: number;
  /** Preferred source, "" when none. */
  src: string;
  gateway: string;
  outLinkIndex: number;
  outLinkName: string;
  priority: number;
  scope: number;
  /** RTN_* (1 unicast, 2 local, 3 broadcast, ...). */
  type: number;
  /** RTPROT_* (2 kernel, 3 boot, 4 static, 16 dhcp). */
  protocol: number;
  flags: number;
  mtu: number;
}

export interface AddressRequest {
  linkName: string;
  address: string;
  prefixLen: number;
  /** IPv4 broadcast; omitted: the kernel default (none). "+" asks for the computed one. */
  broadcast?: string;
  scope?: number;
  /** Lifetimes in seconds; omitted: forever. */
  validLifetime?: number;
  preferredLifetime?: number;
  /** IFA_F_* bits to set (e.g. IFA_F_NOPREFIXROUTE); omitted: none. */
  flags?: number;
}

/** BOND_MODE_* (linux/if_bonding.h). */
export const BOND_MODE = {
  balanceRr: 0,
  activeBackup: 1,
  balanceXor: 2,
  broadcast: 3,
  lacp: 4,
  balanceTlb: 5,
  balanceAlb: 6,
} as const;

/**
 * Every option of a bond, as Talos's BondMasterSpec holds them (zero where unset); the
 * encoder decides which of them the bond's mode lets it send.
 */
export interface BondOptions {
  /** A BOND_MODE value. */
  mode: number;
  xmitHashPolicy: number;
  lacpRate: number;
  arpValidate: number;
  arpAllTargets: number;
  /** Primary member's name (active-backup, tlb, alb). */
  primary?: string;
  primaryReselect: number;
  failOverMac: number;
  adSelect: number;
  miimon: number;
  updelay: number;
  downdelay: number;
  arpInterval: number;
  resendIgmp: number;
  minLinks: number;
  lpInterval: number;
  packetsPerSlave: number;
  numPeerNotif: number;
  tlbDynamicLb: number;
  allSlavesActive: number;
  useCarrier: boolean;
  adActorSysPrio: number;
  adUserPortKey: number;
  peerNotifyDelay: number;
}

/**
 * The options a bond's mode lets reach the kernel, in Talos's encoding order: the kernel
 * refuses the others for the mode ("mode dependency failed"), and the delays mean nothing
 * without MII monitoring.
 */
export function bondOptionsSent(o: BondOptions): Array<keyof BondOptions> {
  const lacp = o.mode === BOND_MODE.lacp;
  const tlbOrAlb = o.mode === BOND_MODE.balanceTlb || o.mode === BOND_MODE.balanceAlb;
  const arpMonitor = !lacp && !tlbOrAlb;
  const mii = o.miimon !== 0;
  const keys: Array<[keyof BondOptions, boolean]> = [
    ["mode", true],
    ["xmitHashPolicy", true],
    ["lacpRate", lacp],
    ["arpValidate", arpMonitor],
    ["arpAllTargets", true],
    ["primary", o.mode === BOND_MODE.activeBackup || tlbOrAlb],
    ["primaryReselect", true],
    ["failOverMac", true],
    ["adSelect", true],
    ["miimon", true],
    ["updelay", mii],
    ["downdelay", mii],
    ["arpInterval", arpMonitor],
    ["resendIgmp", true],
    ["minLinks", true],
    ["lpInterval", true],
    ["packetsPerSlave", o.mode === BOND_MODE.balanceRr],
    ["numPeerNotif", true],
    ["tlbDynamicLb", tlbOrAlb],
    ["allSlavesActive", true],
    ["useCarrier", true],
    ["adActorSysPrio", lacp],
    ["adUserPortKey", lacp],
    ["peerNotifyDelay", mii],
  ];
  return keys.filter(([, sent]) => sent).map(([k]) => k);
}

export interface BridgeOptions {
  stp?: boolean;
  vlanFiltering?: boolean;
}

/** A logical link to create: the kinds Talos's config can declare. */
export type LinkCreateRequest =
  | { kind: "dummy"; name: string }
  | {
      kind: "vlan";
      name: string;
      parentName: string;
      vlanId: number /** 0x8100 (802.1Q, default) or 0x88a8 (802.1ad). */;
      protocol?: number;
    }
  | { kind: "bond"; name: string; bond: BondOptions }
  | { kind: "bridge"; name: string; bridge: BridgeOptions };

/** New settings for an existing bond or bridge, changed in place. */
export type LinkSettingsRequest = Extract<LinkCreateRequest, { kind: "bond" | "bridge" }>;

export interface RouteRequest {
  family: IpFamily;
  dst: string;
  dstLen: number;
  gateway?: string;
  src?: string;
  outLinkName?: string;
  table?: number;
  priority?: number;
  scope?: number;
  type?: number;
  protocol?: number;
  mtu?: number;
}

export interface NetKernel {
  listLinks(): Promise<KernelLink[]>;
  listAddresses(): Promise<KernelAddress[]>;
  /** Routes of every table. */
  listRoutes(): Promise<KernelRoute[]>;
  setLinkUp(name: string, up: boolean): Promise<void>;
  setLinkMtu(name: string, mtu: number): Promise<void>;
  /** Creates a logical link (down, as the kernel makes it). */
  createLink(req: LinkCreateRequest): Promise<void>;
  /**
   * Changes a bond's or bridge's settings in place (same index). The kernel takes some bond
   * options only from a bond that is down and has no members; the caller sees to that.
   */
  setLinkSettings(req: LinkSettingsRequest): Promise<void>;
  /** Deletes a link; absent already is not an error. */
  deleteLink(name: string): Promise<void>;
  /** Enslaves a link to a bond or bridge, or frees it (master undefined). */
  setLinkMaster(name: string, master: string | undefined): Promise<void>;
  /** Adds or refreshes (replace semantics) an address. */
  addAddress(req: AddressRequest): Promise<void>;
  /** Removes an address; absent already is not an error. */
  removeAddress(req: AddressRequest): Promise<void>;
  /** Broadcasts a gratuitous ARP for an IPv4 address on an Ethernet link (nothing for IPv6 or other links, as Talos). */
  announceAddress(linkName: string, address: string): Promise<void>;
  /** Broadcasts one UDP packet from 0.0.0.0 to 255.255.255.255 out of a link (a DHCPv4 client without an address). */
  broadcastUdp4(linkName: string, srcPort: number, dstPort: number, payload: Buffer): Promise<void>;
  /** Adds or replaces a route. */
  addRoute(req: RouteRequest): Promise<void>;
  /** Removes a route; absent already is not an error. */
  removeRoute(req: RouteRequest): Promise<void>;
  /** Calls onChange (coalesced) whenever links, addresses or routes change, until signal aborts. */
  watch(signal: AbortSignal, onChange: (changes: Set<NetChange>) => void): void;
}

// Kernel constants used by callers (values from the Linux UAPI headers).
export const ARPHRD_ETHER = 1;
export const ARPHRD_LOOPBACK = 772;
export const IFF_UP = 0x1;
export const IFF_BROADCAST = 0x2;
export const IFF_LOOPBACK = 0x8;
export const IFF_POINTOPOINT = 0x10;
export const IFF_RUNNING = 0x40;
export const IFF_NOARP = 0x80;
export const IFF_MULTICAST = 0x1000;
export const IFF_LOWER_UP = 0x10000;
export const IFF_DORMANT = 0x20000;
export const OPER_UNKNOWN = 0;
export const OPER_DOWN = 2;
export const OPER_UP = 6;
export const SCOPE_UNIVERSE = 0;
export const SCOPE_LINK = 253;
export const SCOPE_HOST = 254;
export const RTN_UNICAST = 1;
export const RTN_LOCAL = 2;
export const RTN_BROADCAST = 3;
export const RTPROT_KERNEL = 2;
export const RTPROT_BOOT = 3;
export const RTPROT_STATIC = 4;
export const RTPROT_DHCP = 16;
export const TABLE_MAIN = 254;
export const TABLE_LOCAL = 255;
export const IFA_F_PERMANENT = 0x80;
export const IFA_F_NOPREFIXROUTE = 0x200;

/** The IPv4 network address of addr/prefixLen ("10.0.0.7", 24 -> "10.0.0.0"). */
export function ipv4Network(addr: string, prefixLen: number): string {
  return intToIpv4((ipv4ToInt(addr) & ipv4PrefixMask(prefixLen)) >>> 0);
}

/** The netmask of a prefix length as an unsigned 32-bit number (24 -> 0xffffff00). */
export function ipv4PrefixMask(prefixLen: number): number {
  // Shifting by 32 is a no-op in JS, so /0 needs its own case.
  return prefixLen === 0 ? 0 : (0xffffffff << (32 - prefixLen)) >>> 0;
}

export function ipv4ToInt(addr: string): number {
  const words = addr.split(".");
  const parts = words.map((p) => Number(p));
  // Decimal octets only: Number() would also take "", " 1" and "0x1".
  if (parts.length !== 4 || words.some((w) => !/^\d{1,3}$/.test(w)) || parts.some((p) => p > 255)) {
    throw new InvalidInputError(`not an IPv4 address: ${JSON.stringify(addr)}`);
  }
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

export function intToIpv4(n: number): string {
  return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}
