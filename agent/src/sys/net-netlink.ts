// NetKernel over rtnetlink (the npm `netlink` package's N-API socket): dumps for reads,
// RTM_NEW*/RTM_DEL* requests for writes and the kernel's multicast groups for change
// notifications, all in-process. The package leaves IFLA_LINKINFO raw, so the
// kind-specific attributes (VLAN id, bond and bridge options) are encoded here.

import { isIP } from "node:net";
// Only rtnetlink, by path: the package's index also loads its nl80211, genl and WireGuard families
// (~0.1 s of CPU at every machined start on a fast host, many times that under emulation).
import { FlagsNew } from "netlink/dist/constants.js";
import { createRtNetlink, type RtNetlinkSocket } from "netlink/dist/rt/rt.js";
import * as rt from "netlink/dist/rt/structs.js";
import { describeError, SystemError } from "../errors.js";
import { logger } from "../log.js";
import { sendGratuitousArp } from "./arp-announce.js";
import { ETH_P_IP, sendLinkBroadcast, udp4BroadcastPacket } from "./packet-socket.js";
import {
  type AddressRequest,
  type BondOptions,
  type BridgeOptions,
  type LinkSettingsRequest,
  bondOptionsSent,
  type IpFamily,
  type KernelAddress,
  type KernelLink,
  type KernelRoute,
  type LinkCreateRequest,
  type NetChange,
  type NetKernel,
  type RouteRequest,
  ARPHRD_ETHER,
  IFF_LOWER_UP,
  RTN_UNICAST,
  RTPROT_BOOT,
  TABLE_MAIN,
  intToIpv4,
  ipv4PrefixMask,
  ipv4ToInt,
} from "./net.js";

const log = logger("net-netlink");

const AF_INET = 2;
const AF_INET6 = 10;
const AF_UNSPEC = 0;

// IFLA_INFO_* (linux/if_link.h).
const INFO_KIND = 1;
const INFO_DATA = 2;
const INFO_SLAVE_KIND = 4;
// IFLA_VLAN_*.
const VLAN_ID = 1;
const VLAN_PROTOCOL = 5;
// IFLA_BR_*.
const BR_STP_STATE = 5;
const BR_VLAN_FILTERING = 7;
// Multicast groups RTNLGRP_* of the notifications we follow.
const GROUPS: Array<[number, NetChange]> = [
  [rt.MulticastGroups.LINK, "link"],
  [rt.MulticastGroups.IPV4_IFADDR, "address"],
  [rt.MulticastGroups.IPV6_IFADDR, "address"],
  [rt.MulticastGroups.IPV4_ROUTE, "route"],
  [rt.MulticastGroups.IPV6_ROUTE, "route"],
];

/** One rtnetlink attribute: 4-byte header, payload, padding to 4 (host order, little-endian on x64 and arm64). */
export function nlattr(type: number, payload: Buffer): Buffer {
  const len = 4 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  payload.copy(out, 4);
  return out;
}

function u8(v: number): Buffer {
  return Buffer.from([v & 0xff]);
}
function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v);
  return b;
}
function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
}
function be16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}
function str(v: string): Buffer {
  return Buffer.from(`${v}\0`);
}

/** Splits a run of attributes into (type, payload) pairs; the nested flag bits are dropped. */
export function parseAttrs(buf: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let off = 0;
  while (off + 4 <= buf.length) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || off + len > buf.length) break;
    out.set(buf.readUInt16LE(off + 2) & 0x3fff, buf.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}

function cstring(b: Buffer | undefined): string {
  if (!b) return "";
  const nul = b.indexOf(0);
  return b.subarray(0, nul < 0 ? b.length : nul).toString();
}

// IFLA_BOND_* (linux/if_link.h) of each option, with its width in bytes on the wire.
const BOND_ATTRS: Record<keyof BondOptions, [type: number, width: 1 | 2 | 4]> = {
  mode: [1, 1],
  miimon: [3, 4],
  updelay: [4, 4],
  downdelay: [5, 4],
  useCarrier: [6, 1],
  arpInterval: [7, 4],
  arpValidate: [9, 4],
  arpAllTargets: [10, 4],
  primary: [11, 4],
  primaryReselect: [12, 1],
  failOverMac: [13, 1],
  xmitHashPolicy: [14, 1],
  resendIgmp: [15, 4],
  numPeerNotif: [16, 1],
  allSlavesActive: [17, 1],
  minLinks: [18, 4],
  lpInterval: [19, 4],
  packetsPerSlave: [20, 4],
  lacpRate: [21, 1],
  adSelect: [22, 1],
  adActorSysPrio: [24, 2],
  adUserPortKey: [25, 2],
  tlbDynamicLb: [27, 1],
  peerNotifyDelay: [28, 4],
};
const bondKeyOf = new Map(Object.entries(BOND_ATTRS).map(([k, [type]]) => [type, k as keyof BondOptions] as const));

function uint(width: 1 | 2 | 4, v: number): Buffer {
  return width === 1 ? u8(v) : width === 2 ? u16(v) : u32(v);
}

/**
 * IFLA_INFO_DATA of a bond, as Talos v1.7 encodes it: the options its mode lets through
 * (bondOptionsSent), in its order. primaryIndex is resolved by the caller (0: none).
 */
export function bondInfoData(o: BondOptions, primaryIndex: number): Buffer {
  return Buffer.concat(
    bondOptionsSent(o).map((key) => {
      const [type, width] = BOND_ATTRS[key];
      const v = key === "primary" ? primaryIndex : key === "useCarrier" ? (o.useCarrier ? 1 : 0) : o[key];
      return nlattr(type, uint(width, v));
    }),
  );
}

/** A bond's IFLA_INFO_DATA as the kernel reports it; options it leaves out are 0, its primary (an index) becomes a name. */
export function decodeBondInfoData(data: Buffer, nameOf: (index: number) => string | undefined): BondOptions {
  const o: BondOptions = {
    mode: 0,
    xmitHashPolicy: 0,
    lacpRate: 0,
    arpValidate: 0,
    arpAllTargets: 0,
    primaryReselect: 0,
    failOverMac: 0,
    adSelect: 0,
    miimon: 0,
    updelay: 0,
    downdelay: 0,
    arpInterval: 0,
    resendIgmp: 0,
    minLinks: 0,
    lpInterval: 0,
    packetsPerSlave: 0,
    numPeerNotif: 0,
    tlbDynamicLb: 0,
    allSlavesActive: 0,
    useCarrier: false,
    adActorSysPrio: 0,
    adUserPortKey: 0,
    peerNotifyDelay: 0,
  };
  for (const [type, payload] of parseAttrs(data)) {
    const key = bondKeyOf.get(type);
    if (!key) continue;
    const width = BOND_ATTRS[key][1];
    if (payload.length < width) continue;
    const v = width === 1 ? payload.readUInt8(0) : width === 2 ? payload.readUInt16LE(0) : payload.readUInt32LE(0);
    if (key === "primary") {
      const name = nameOf(v);
      if (name) o.primary = name;
    } else if (key === "useCarrier") o.useCarrier = v === 1;
    else o[key] = v;
  }
  return o;
}

/** A bridge's IFLA_INFO_DATA as the kernel reports it (STP on in kernel or user space: stp_state 1 or 2). */
export function decodeBridgeInfoData(data: Buffer): Required<BridgeOptions> {
  const a = parseAttrs(data);
  return {
    stp: (a.get(BR_STP_STATE)?.readUInt32LE(0) ?? 0) !== 0,
    vlanFiltering: (a.get(BR_VLAN_FILTERING)?.readUInt8(0) ?? 0) !== 0,
  };
}

function u32be(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

/** IFLA_LINKINFO for a new link of the request's kind. */
export function linkInfo(
  req: LinkCreateRequest | LinkSettingsRequest,
  indexOf: (name: string) => number | undefined,
): Buffer {
  const kind = nlattr(INFO_KIND, str(req.kind));
  switch (req.kind) {
    case "dummy":
      return kind;
    case "vlan": {
      const data = Buffer.concat([
        nlattr(VLAN_ID, u16(req.vlanId)),
        nlattr(VLAN_PROTOCOL, be16(req.protocol ?? 0x8100)),
      ]);
      return Buffer.concat([kind, nlattr(INFO_DATA, data)]);
    }
    case "bond": {
      const primary = req.bond.primary ? (indexOf(req.bond.primary) ?? 0) : 0;
      return Buffer.concat([kind, nlattr(INFO_DATA, bondInfoData(req.bond, primary))]);
    }
    case "bridge": {
      const data: Buffer[] = [];
      if (req.bridge.stp !== undefined) data.push(nlattr(BR_STP_STATE, u32(req.bridge.stp ? 1 : 0)));
      if (req.bridge.vlanFiltering !== undefined)
        data.push(nlattr(BR_VLAN_FILTERING, u8(req.bridge.vlanFiltering ? 1 : 0)));
      return data.length === 0 ? kind : Buffer.concat([kind, nlattr(INFO_DATA, Buffer.concat(data))]);
    }
  }
}

function ipBytes(addr: string): Buffer {
  if (isIP(addr) === 4) return u32be(ipv4ToInt(addr));
  if (isIP(addr) !== 6) throw new SystemError(`not an IP address: ${JSON.stringify(addr)}`, { address: addr });
  // Expand "::" and any embedded IPv4 tail into 8 groups.
  let text = addr;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4ToInt(v4[1]!);
    text = `${text.slice(0, v4.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  const b = Buffer.alloc(16);
  groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
  return b;
}

/** An address attribute as text: dotted IPv4 or RFC 5952 IPv6. */
export function ipText(b: Buffer | undefined): string {
  if (!b || b.length === 0) return "";
  if (b.length === 4) return intToIpv4(b.readUInt32BE(0));
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i));
  // Longest run (>= 2) of zero groups becomes "::".
  let bestAt = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt < 0) return hex.join(":");
  return `${hex.slice(0, bestAt).join(":")}::${hex.slice(bestAt + bestLen).join(":")}`;
}

function macText(b: Buffer | undefined): string {
  if (!b || b.length === 0) return "";
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");
}

/**
 * Numeric value of a field the package renders as an enum name when it knows it.
 * `table` is one of the package's TypeScript enums (name -> number, number -> name);
 * callers widen it to a record because TS enums do not index by arbitrary strings.
 */
function enumValue(table: Record<string, string | number>, v: string | number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v === "number") return v;
  const n = table[v];
  return typeof n === "number" ? n : fallback;
}

// The package reports kernel errors as "Request rejected: <errno name>" (our cause chain carries it).
function isExists(err: unknown): boolean {
  return /EEXIST/.test(describeError(err));
}
function isAbsent(err: unknown): boolean {
  return /ESRCH|ENOENT|EADDRNOTAVAIL|ENODEV/.test(describeError(err));
}

export class NetlinkNetKernel implements NetKernel {
  private readonly socket: RtNetlinkSocket;
  private readonly timeoutMs: number;

  constructor(opts: { timeoutMs?: number } = {}) {
    this.socket = createRtNetlink({ recvBufferSize: 1 << 20, sendBufferSize: 1 << 16 });
    // The package re-emits a failed receive (ENOBUFS after an overrun) as 'error', which unheard
    // would end the process; a request whose reply it cost fails by its timeout.
    this.socket.socket.on("error", (err) => log.warn("rtnetlink request socket", { error: describeError(err) }));
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  async listLinks(): Promise<KernelLink[]> {
    const msgs = await this.call("list links", () =>
      this.socket.getLinks(undefined, undefined, { timeout: this.timeoutMs }),
    );
    const names = new Map(msgs.map((m) => [m.data.index ?? 0, m.attrs.ifname ?? ""] as const));
    return msgs.map((m) => {
      const a = m.attrs;
      const info = a.linkinfo ? parseAttrs(a.linkinfo) : new Map<number, Buffer>();
      const kind = cstring(info.get(INFO_KIND));
      const data = info.get(INFO_DATA);
      const flags = rt.formatDeviceFlags(m.data.flags ?? {});
      const hw = macText(a.address);
      return {
        index: m.data.index ?? 0,
        name: a.ifname ?? "",
        type: enumValue(rt.LinkType as unknown as Record<string, string | number>, m.data.type, 65534),
        flags,
        mtu: a.mtu ?? 0,
        hardwareAddr: hw,
        broadcastAddr: macText(a.broadcast),
        permanentAddr: macText(a.permAddress) || hw,
        operState: a.operstate ?? 0,
        kind,
        slaveKind: cstring(info.get(INFO_SLAVE_KIND)),
        masterIndex: a.master ?? 0,
        linkIndex: a.link && a.link.length >= 4 ? a.link.readUInt32LE(0) : 0,
        vlanId: kind === "vlan" && data ? (parseAttrs(data).get(VLAN_ID)?.readUInt16LE(0) ?? 0) : 0,
        vlanProtocol: kind === "vlan" && data ? (parseAttrs(data).get(VLAN_PROTOCOL)?.readUInt16BE(0) ?? 0) : 0,
        queueDisc: a.qdisc ?? "",
        carrier: (flags & IFF_LOWER_UP) !== 0,
        ...(kind === "bond" && data ? { bond: decodeBondInfoData(data, (i) => names.get(i)) } : {}),
        ...(kind === "bridge" && data ? { bridge: decodeBridgeInfoData(data) } : {}),
      };
    });
  }

  async listAddresses(): Promise<KernelAddress[]> {
    const links = await this.linkNames();
    const msgs = await this.call("list addresses", () =>
      this.socket.getAddresses(undefined, undefined, { timeout: this.timeoutMs }),
    );
    const out: KernelAddress[] = [];
    for (const m of msgs) {
      const family: IpFamily | undefined = m.data.family === AF_INET ? 4 : m.data.family === AF_INET6 ? 6 : undefined;
      if (!family) continue;
      const a = m.attrs;
      // IFA_FLAGS (u32) supersedes the header's 8-bit copy when present.
      const flags = rt.formatAddressFlags(a.flags ?? m.data.flags ?? {});
      const index = m.data.index ?? 0;
      const address = ipText(a.address ?? a.local);
      out.push({
        linkIndex: index,
        linkName: links.get(index) ?? a.label ?? "",
        family,
        address,
        prefixLen: m.data.prefixlen ?? 0,
        local: family === 4 ? ipText(a.local) : "",
        broadcast: ipText(a.broadcast),
        scope: m.data.scope ?? 0,
        flags,
      });
    }
    return out;
  }

  async listRoutes(): Promise<KernelRoute[]> {
    const links = await this.linkNames();
    const msgs = await this.call("list routes", () =>
      this.socket.getRoutes(undefined, undefined, { timeout: this.timeoutMs }),
    );
    const out: KernelRoute[] = [];
    for (const m of msgs) {
      const family: IpFamily | undefined = m.data.family === AF_INET ? 4 : m.data.family === AF_INET6 ? 6 : undefined;
      if (!family) continue;
      const a = m.attrs;
      const oif = a.oif ?? 0;
      out.push({
        family,
        // RTA_TABLE carries ids above 255; the header's byte is RT_TABLE_COMPAT then.
        table: a.table ?? m.data.table ?? TABLE_MAIN,
        dst: (m.data.dstLen ?? 0) === 0 ? "" : ipText(a.dst),
        dstLen: m.data.dstLen ?? 0,
        src: ipText(a.prefsrc),
        gateway: ipText(a.gateway),
        outLinkIndex: oif,
        outLinkName: links.get(oif) ?? "",
        priority: a.priority ?? 0,
        scope: enumValue(rt.RouteScope as unknown as Record<string, string | number>, m.data.scope, 0),
        type: enumValue(rt.RouteType as unknown as Record<string, string | number>, m.data.type, RTN_UNICAST),
        protocol: enumValue(
          rt.RouteProtocol as unknown as Record<string, string | number>,
          m.data.protocol,
          RTPROT_BOOT,
        ),
        flags: rt.formatRouteFlags(m.data.flags ?? {}),
        mtu: a.metrics?.mtu && a.metrics.mtu.length >= 4 ? a.metrics.mtu.readUInt32LE(0) : 0,
      });
    }
    return out;
  }

  async setLinkUp(name: string, up: boolean): Promise<void> {
    const index = await this.indexOf(name);
    await this.call(`set link ${name} ${up ? "up" : "down"}`, () =>
      this.socket.setLink(
        { index, change: { up: true }, flags: up ? { up: true } : {} },
        {},
        { timeout: this.timeoutMs },
      ),
    );
  }

  async setLinkMtu(name: string, mtu: number): Promise<void> {
    const index = await this.indexOf(name);
    await this.call(`set link ${name} mtu ${mtu}`, () =>
      this.socket.setLink({ index }, { mtu }, { timeout: this.timeoutMs }),
    );
  }

  async createLink(req: LinkCreateRequest): Promise<void> {
    const byName = new Map([...(await this.linkNames())].map(([i, n]) => [n, i] as const));
    const attrs: Parameters<RtNetlinkSocket["newLink"]>[1] = {
      ifname: req.name,
      linkinfo: linkInfo(req, (n) => byName.get(n)),
    };
    if (req.kind === "vlan") {
      const parent = byName.get(req.parentName);
      if (parent === undefined)
        throw new SystemError(`create vlan ${req.name}: parent link ${req.parentName} not found`, {
          link: req.name,
          parent: req.parentName,
        });
      attrs.link = u32(parent);
    }
    await this.call(`create ${req.kind} link ${req.name}`, () =>
      this.socket.newLink({ family: AF_UNSPEC }, attrs, {
        flags: FlagsNew.CREATE | FlagsNew.EXCL,
        timeout: this.timeoutMs,
      }),
    );
  }

  // RTM_NEWLINK on an existing index without NLM_F_CREATE is the kernel's changelink
  // (RTM_SETLINK ignores IFLA_LINKINFO).
  async setLinkSettings(req: LinkSettingsRequest): Promise<void> {
    const byName = new Map([...(await this.linkNames())].map(([i, n]) => [n, i] as const));
    const index = byName.get(req.name);
    if (index === undefined)
      throw new LinkNotFound(`change ${req.kind} ${req.name}: link not found`, { link: req.name });
    await this.call(`change ${req.kind} link ${req.name}`, () =>
      this.socket.newLink(
        { family: AF_UNSPEC, index },
        { linkinfo: linkInfo(req, (n) => byName.get(n)) },
        { timeout: this.timeoutMs },
      ),
    );
  }

  async deleteLink(name: string): Promise<void> {
    const index = (await this.linkIndexes()).get(name);
    if (index === undefined) return;
    try {
      await this.call(`delete link ${name}`, () => this.socket.delLink({ index }, {}, { timeout: this.timeoutMs }));
    } catch (err) {
      if (!isAbsent(err)) throw err;
    }
  }

  async setLinkMaster(name: string, master: string | undefined): Promise<void> {
    const indexes = await this.linkIndexes();
    const index = indexes.get(name);
    if (index === undefined) throw new SystemError(`set master of ${name}: link not found`, { link: name });
    let masterIndex = 0;
    if (master !== undefined) {
      const m = indexes.get(master);
      if (m === undefined)
        throw new SystemError(`set master of ${name}: master ${master} not found`, { link: name, master });
      masterIndex = m;
    }
    await this.call(`set link ${name} master ${master ?? "none"}`, () =>
      this.socket.setLink({ index }, { master: masterIndex }, { timeout: this.timeoutMs }),
    );
  }

  async addAddress(req: AddressRequest): Promise<void> {
    const index = await this.indexOf(req.linkName);
    const family = isIP(req.address) === 6 ? AF_INET6 : AF_INET;
    const local = ipBytes(req.address);
    const attrs: rt.AddressAttrs = { local, address: local, flags: rt.parseAddressFlags(req.flags ?? 0) };
    if (family === AF_INET && req.broadcast !== undefined) {
      attrs.broadcast =
        req.broadcast === "+"
          ? u32be((ipv4ToInt(req.address) | ~ipv4PrefixMask(req.prefixLen)) >>> 0)
          : ipBytes(req.broadcast);
    }
    if (req.validLifetime !== undefined || req.preferredLifetime !== undefined) {
      const forever = 0xffffffff;
      attrs.cacheInfo = {
        ifaValid: req.validLifetime ?? forever,
        ifaPrefered: req.preferredLifetime ?? req.validLifetime ?? forever,
        cstamp: 0,
        tstamp: 0,
      };
    }
    await this.call(`add address ${req.address}/${req.prefixLen} to ${req.linkName}`, () =>
      this.socket.newAddress(
        {
          family,
          prefixlen: req.prefixLen,
          index,
          scope: req.scope ?? 0,
          flags: rt.parseAddressFlags((req.flags ?? 0) & 0xff),
        },
        attrs,
        { flags: FlagsNew.CREATE | FlagsNew.REPLACE, timeout: this.timeoutMs },
      ),
    );
  }

  async removeAddress(req: AddressRequest): Promise<void> {
    const index = (await this.linkIndexes()).get(req.linkName);
    if (index === undefined) return;
    const family = isIP(req.address) === 6 ? AF_INET6 : AF_INET;
    const local = ipBytes(req.address);
    try {
      await this.call(`remove address ${req.address}/${req.prefixLen} from ${req.linkName}`, () =>
        this.socket.delAddress(
          { family, prefixlen: req.prefixLen, index },
          { local, address: local },
          { timeout: this.timeoutMs },
        ),
      );
    } catch (err) {
      if (!isAbsent(err)) throw err;
    }
  }

  async announceAddress(linkName: string, address: string): Promise<void> {
    if (isIP(address) !== 4) return;
    const link = (await this.listLinks()).find((l) => l.name === linkName);
    if (!link) throw new SystemError(`announce ${address} on ${linkName}: link not found`, { link: linkName });
    if (link.type !== ARPHRD_ETHER || !/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(link.hardwareAddr)) return;
    sendGratuitousArp(link.index, link.hardwareAddr, address);
  }

  async broadcastUdp4(linkName: string, srcPort: number, dstPort: number, payload: Buffer): Promise<void> {
    const link = (await this.listLinks()).find((l) => l.name === linkName);
    if (!link) throw new SystemError(`broadcast on ${linkName}: link not found`, { link: linkName });
    sendLinkBroadcast(link.index, ETH_P_IP, udp4BroadcastPacket(srcPort, dstPort, payload));
  }

  // NLM_F_REPLACE swaps out the first route with the same destination and metric,
  // whatever its link: with DHCP on two links that would clobber the other link's
  // default route. So: leave an identical route alone, re-create one that differs
  // only in attributes, and create a new one next to other links' routes.
  async addRoute(req: RouteRequest): Promise<void> {
    const table = req.table ?? TABLE_MAIN;
    const priority = req.priority ?? (req.family === 6 ? 1024 : 0);
    const same = (await this.listRoutes()).find(
      (r) =>
        r.family === req.family &&
        r.table === table &&
        r.dst === (req.dstLen === 0 ? "" : req.dst) &&
        r.dstLen === req.dstLen &&
        r.priority === priority &&
        r.gateway === (req.gateway ?? "") &&
        (req.outLinkName === undefined || r.outLinkName === req.outLinkName),
    );
    if (same) {
      const unchanged =
        (req.src === undefined || same.src === req.src) &&
        (req.mtu === undefined || same.mtu === req.mtu) &&
        (req.scope === undefined || same.scope === req.scope) &&
        (req.protocol === undefined || same.protocol === req.protocol);
      if (unchanged) return;
      await this.removeRoute(req);
    }
    const [data, attrs] = await this.routeMessage(req);
    try {
      await this.call(`add route ${describeRoute(req)}`, () =>
        this.socket.newRoute(data, attrs, { flags: FlagsNew.CREATE, timeout: this.timeoutMs }),
      );
    } catch (err) {
      if (!isExists(err)) throw err;
    }
  }

  async removeRoute(req: RouteRequest): Promise<void> {
    let msg: [rt.Route, rt.RouteAttrs];
    try {
      msg = await this.routeMessage(req);
    } catch (err) {
      if (err instanceof LinkNotFound) return;
      throw err;
    }
    try {
      await this.call(`remove route ${describeRoute(req)}`, () =>
        this.socket.delRoute(msg[0], msg[1], { timeout: this.timeoutMs }),
      );
    } catch (err) {
      if (!isAbsent(err)) throw err;
    }
  }

  /** One notification socket serves every watcher; it closes with the last one. */
  watch(signal: AbortSignal, onChange: (changes: Set<NetChange>) => void): void {
    if (signal.aborted) return;
    this.watchers.add(onChange);
    signal.addEventListener(
      "abort",
      () => {
        this.watchers.delete(onChange);
        if (this.watchers.size === 0) this.stopMonitor();
      },
      { once: true },
    );
    if (!this.monitor) this.startMonitor();
  }

  /** Closes the request socket (and the notification one); the kernel object is unusable afterwards. */
  close(): void {
    this.watchers.clear();
    this.stopMonitor();
    this.socket.socket.close();
  }

  private readonly watchers = new Set<(changes: Set<NetChange>) => void>();
  private monitor: RtNetlinkSocket | undefined;
  private pending = new Set<NetChange>();
  private flushQueued = false;

  private startMonitor(): void {
    // ref: a watcher is what keeps a node agent listening.
    const sock = createRtNetlink({ ref: true, recvBufferSize: 1 << 20, sendBufferSize: 1 << 12 });
    const kindOf = new Map<string, NetChange>([
      ["link", "link"],
      ["address", "address"],
      ["route", "route"],
    ]);
    for (const [group] of GROUPS) sock.addMembership(group);
    sock.on("message", (msgs) => {
      for (const m of msgs) {
        const c = kindOf.get(m.kind);
        if (c) this.pending.add(c);
      }
      this.flush();
    });
    sock.socket.on("error", (err) => {
      // ENOBUFS: the kernel dropped notifications; everything may have changed.
      log.warn("rtnetlink notifications", { error: describeError(err) });
      for (const [, c] of GROUPS) this.pending.add(c);
      this.flush();
    });
    this.monitor = sock;
  }

  // Coalesce a burst (one address add yields several route messages) into one call.
  private flush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      const batch = this.pending;
      this.pending = new Set();
      if (batch.size === 0) return;
      for (const w of [...this.watchers]) w(batch);
    });
  }

  private stopMonitor(): void {
    const sock = this.monitor;
    this.monitor = undefined;
    this.pending = new Set();
    sock?.socket.close();
  }

  private async routeMessage(req: RouteRequest): Promise<[rt.Route, rt.RouteAttrs]> {
    const table = req.table ?? TABLE_MAIN;
    const data: rt.Route = {
      family: req.family === 6 ? AF_INET6 : AF_INET,
      dstLen: req.dstLen,
      // Ids above 255 travel in RTA_TABLE only (RT_TABLE_COMPAT in the header).
      table: table > 255 ? 252 : table,
      protocol: req.protocol ?? RTPROT_BOOT,
      scope: req.scope ?? 0,
      type: req.type ?? RTN_UNICAST,
    };
    const attrs: rt.RouteAttrs = { table };
    if (req.dstLen > 0) attrs.dst = ipBytes(req.dst);
    if (req.gateway) attrs.gateway = ipBytes(req.gateway);
    if (req.src) attrs.prefsrc = ipBytes(req.src);
    if (req.priority !== undefined) attrs.priority = req.priority;
    if (req.mtu !== undefined && req.mtu > 0) attrs.metrics = { mtu: u32(req.mtu) };
    if (req.outLinkName) {
      const oif = (await this.linkIndexes()).get(req.outLinkName);
      if (oif === undefined)
        throw new LinkNotFound(`route ${describeRoute(req)}: link ${req.outLinkName} not found`, {
          link: req.outLinkName,
        });
      attrs.oif = oif;
    }
    return [data, attrs];
  }

  private async linkNames(): Promise<Map<number, string>> {
    const msgs = await this.call("list links", () =>
      this.socket.getLinks(undefined, undefined, { timeout: this.timeoutMs }),
    );
    return new Map(msgs.map((m) => [m.data.index ?? 0, m.attrs.ifname ?? ""] as const));
  }

  private async linkIndexes(): Promise<Map<string, number>> {
    return new Map([...(await this.linkNames())].map(([i, n]) => [n, i] as const));
  }

  private async indexOf(name: string): Promise<number> {
    const index = (await this.linkIndexes()).get(name);
    if (index === undefined) throw new LinkNotFound(`link ${name} not found`, { link: name });
    return index;
  }

  // One request at a time: the kernel runs one dump per socket (EBUSY otherwise) and
  // the package cannot tell interleaved multipart replies apart.
  private queue: Promise<unknown> = Promise.resolve();

  private call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run.catch((err: unknown) => {
      throw new SystemError(`rtnetlink: ${what}`, { operation: what }, { cause: err });
    });
  }
}

/** A request named a link the kernel does not have. */
export class LinkNotFound extends SystemError {}

function describeRoute(req: RouteRequest): string {
  const dst = req.dstLen === 0 ? "default" : `${req.dst}/${req.dstLen}`;
  return `${dst}${req.gateway ? ` via ${req.gateway}` : ""}${req.outLinkName ? ` dev ${req.outLinkName}` : ""}`;
}
