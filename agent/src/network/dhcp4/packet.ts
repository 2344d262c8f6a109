// DHCPv4 message codec (RFC 2131 fixed header + RFC 2132 options, RFC 3396 long
// options, RFC 3442 classless static routes). Pure functions over Buffers.

import { InvalidInputError } from "../../errors.js";
import { intToIpv4, ipv4PrefixMask, ipv4ToInt } from "../../sys/net.js";

export const BOOTREQUEST = 1;
export const BOOTREPLY = 2;
export const FLAG_BROADCAST = 0x8000;
export const SERVER_PORT = 67;
export const CLIENT_PORT = 68;
const MAGIC = 0x63825363;
const HEADER_LEN = 236;

export enum MessageType {
  Discover = 1,
  Offer = 2,
  Request = 3,
  Decline = 4,
  Ack = 5,
  Nak = 6,
  Release = 7,
  Inform = 8,
}

export enum Option {
  Pad = 0,
  SubnetMask = 1,
  Router = 3,
  DomainNameServer = 6,
  HostName = 12,
  DomainName = 15,
  InterfaceMTU = 26,
  BroadcastAddress = 28,
  NTPServers = 42,
  RequestedIP = 50,
  LeaseTime = 51,
  Overload = 52,
  MessageType = 53,
  ServerIdentifier = 54,
  ParameterRequestList = 55,
  Message = 56,
  MaxMessageSize = 57,
  RenewalTime = 58,
  RebindingTime = 59,
  VendorClassId = 60,
  ClientIdentifier = 61,
  DomainSearch = 119,
  ClasslessStaticRoute = 121,
  End = 255,
}

export interface DhcpMessage {
  op: number;
  xid: number;
  secs: number;
  flags: number;
  ciaddr: string;
  yiaddr: string;
  siaddr: string;
  giaddr: string;
  /** Client hardware address "aa:bb:cc:dd:ee:ff" (htype 1, hlen 6). */
  chaddr: string;
  /** Option code -> value; repeated instances already concatenated. */
  options: Map<number, Buffer>;
}

export interface ClasslessRoute {
  dst: string;
  dstLen: number;
  gateway: string;
}

/** The options a client cares about, decoded. */
export interface ParsedOptions {
  messageType?: MessageType;
  serverId?: string;
  subnetMask?: string;
  routers: string[];
  dnsServers: string[];
  ntpServers: string[];
  hostname?: string;
  domainName?: string;
  mtu?: number;
  broadcast?: string;
  leaseTime?: number;
  renewalTime?: number;
  rebindingTime?: number;
  classlessRoutes: ClasslessRoute[];
  message?: string;
}

export function encodeMessage(m: DhcpMessage): Buffer {
  const opts: Buffer[] = [];
  for (const [code, value] of m.options) {
    if (code === Option.Pad || code === Option.End) continue;
    // RFC 3396: values longer than 255 bytes are split into consecutive instances.
    for (let off = 0; off < value.length || off === 0; off += 255) {
      const chunk = value.subarray(off, off + 255);
      opts.push(Buffer.from([code, chunk.length]), chunk);
      if (value.length === 0) break;
    }
  }
  opts.push(Buffer.from([Option.End]));
  const header = Buffer.alloc(HEADER_LEN + 4);
  header.writeUInt8(m.op, 0);
  header.writeUInt8(1, 1); // htype ethernet
  header.writeUInt8(6, 2); // hlen
  header.writeUInt8(0, 3);
  header.writeUInt32BE(m.xid >>> 0, 4);
  header.writeUInt16BE(m.secs, 8);
  header.writeUInt16BE(m.flags, 10);
  ipToBuffer(m.ciaddr).copy(header, 12);
  ipToBuffer(m.yiaddr).copy(header, 16);
  ipToBuffer(m.siaddr).copy(header, 20);
  ipToBuffer(m.giaddr).copy(header, 24);
  macToBuffer(m.chaddr).copy(header, 28);
  header.writeUInt32BE(MAGIC, HEADER_LEN);
  const body = Buffer.concat([header, ...opts]);
  // Some servers drop BOOTP-sized packets below 300 bytes.
  return body.length >= 300 ? body : Buffer.concat([body, Buffer.alloc(300 - body.length)]);
}

export function decodeMessage(buf: Buffer): DhcpMessage {
  if (buf.length < HEADER_LEN + 4) throw new InvalidInputError(`DHCP message too short: ${buf.length} bytes`);
  if (buf.readUInt32BE(HEADER_LEN) !== MAGIC) throw new InvalidInputError("DHCP message without magic cookie");
  const hlen = buf.readUInt8(2);
  const options = new Map<number, Buffer>();
  const readOptions = (region: Buffer) => {
    let i = 0;
    while (i < region.length) {
      const code = region[i]!;
      if (code === Option.Pad) {
        i++;
        continue;
      }
      if (code === Option.End) break;
      if (i + 1 >= region.length) throw new InvalidInputError(`DHCP option ${code} truncated`);
      const len = region[i + 1]!;
      if (i + 2 + len > region.length) throw new InvalidInputError(`DHCP option ${code} overruns the packet`);
      const value = region.subarray(i + 2, i + 2 + len);
      const prev = options.get(code);
      options.set(code, prev ? Buffer.concat([prev, value]) : Buffer.from(value));
      i += 2 + len;
    }
  };
  readOptions(buf.subarray(HEADER_LEN + 4));
  // RFC 2132 option overload: options continue in file (1), sname (2) or both (3).
  const overload = options.get(Option.Overload)?.[0] ?? 0;
  if (overload & 1) readOptions(buf.subarray(108, 236));
  if (overload & 2) readOptions(buf.subarray(44, 108));
  return {
    op: buf.readUInt8(0),
    xid: buf.readUInt32BE(4),
    secs: buf.readUInt16BE(8),
    flags: buf.readUInt16BE(10),
    ciaddr: bufferToIp(buf, 12),
    yiaddr: bufferToIp(buf, 16),
    siaddr: bufferToIp(buf, 20),
    giaddr: bufferToIp(buf, 24),
    chaddr: [...buf.subarray(28, 28 + Math.min(hlen, 16))].map((b) => b.toString(16).padStart(2, "0")).join(":"),
    options,
  };
}

export function parseOptions(options: Map<number, Buffer>): ParsedOptions {
  const ip = (code: number) => {
    const v = options.get(code);
    return v && v.length >= 4 ? bufferToIp(v, 0) : undefined;
  };
  const ips = (code: number) => {
    const v = options.get(code);
    const out: string[] = [];
    if (v) for (let i = 0; i + 4 <= v.length; i += 4) out.push(bufferToIp(v, i));
    return out;
  };
  const u32 = (code: number) => {
    const v = options.get(code);
    return v && v.length >= 4 ? v.readUInt32BE(0) : undefined;
  };
  const text = (code: number) => {
    const v = options.get(code);
    // Some servers NUL-terminate strings.
    return v ? v.toString("latin1").replace(/\0+$/, "") : undefined;
  };
  const mtuBuf = options.get(Option.InterfaceMTU);
  const typeBuf = options.get(Option.MessageType);
  const parsed: ParsedOptions = {
    routers: ips(Option.Router),
    dnsServers: ips(Option.DomainNameServer),
    ntpServers: ips(Option.NTPServers),
    classlessRoutes: options.has(Option.ClasslessStaticRoute)
      ? decodeClasslessRoutes(options.get(Option.ClasslessStaticRoute)!)
      : [],
  };
  if (typeBuf && typeBuf.length >= 1) parsed.messageType = typeBuf[0] as MessageType;
  const set = <K extends keyof ParsedOptions>(k: K, v: ParsedOptions[K] | undefined) => {
    if (v !== undefined) parsed[k] = v;
  };
  set("serverId", ip(Option.ServerIdentifier));
  set("subnetMask", ip(Option.SubnetMask));
  set("broadcast", ip(Option.BroadcastAddress));
  set("hostname", text(Option.HostName));
  set("domainName", text(Option.DomainName));
  set("message", text(Option.Message));
  set("leaseTime", u32(Option.LeaseTime));
  set("renewalTime", u32(Option.RenewalTime));
  set("rebindingTime", u32(Option.RebindingTime));
  if (mtuBuf && mtuBuf.length >= 2) parsed.mtu = mtuBuf.readUInt16BE(0);
  return parsed;
}

/** RFC 3442: width octet, significant destination octets, then the router. */
export function decodeClasslessRoutes(v: Buffer): ClasslessRoute[] {
  const out: ClasslessRoute[] = [];
  let i = 0;
  while (i < v.length) {
    const width = v[i]!;
    if (width > 32) throw new InvalidInputError(`classless route with prefix length ${width}`);
    const sig = Math.ceil(width / 8);
    if (i + 1 + sig + 4 > v.length) throw new InvalidInputError("classless static route option truncated");
    const dst = Buffer.alloc(4);
    v.copy(dst, 0, i + 1, i + 1 + sig);
    out.push({ dst: bufferToIp(dst, 0), dstLen: width, gateway: bufferToIp(v, i + 1 + sig) });
    i += 1 + sig + 4;
  }
  return out;
}

export function encodeClasslessRoutes(routes: ClasslessRoute[]): Buffer {
  return Buffer.concat(
    routes.map((r) => {
      const sig = Math.ceil(r.dstLen / 8);
      return Buffer.concat([Buffer.from([r.dstLen]), ipToBuffer(r.dst).subarray(0, sig), ipToBuffer(r.gateway)]);
    }),
  );
}

export function maskToPrefixLen(mask: string): number {
  const n = ipv4ToInt(mask);
  const len = Math.clz32(~n >>> 0); // leading one bits
  // Non-contiguous masks are invalid; be strict so a bad server is noticed.
  if (ipv4PrefixMask(len) !== n) throw new InvalidInputError(`non-contiguous subnet mask ${mask}`);
  return len;
}

export function prefixLenToMask(len: number): string {
  return intToIpv4(ipv4PrefixMask(len));
}

export function ipToBuffer(ip: string): Buffer {
  return u32Buffer(ipv4ToInt(ip));
}

export function bufferToIp(b: Buffer, off: number): string {
  return `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`;
}

export function macToBuffer(mac: string): Buffer {
  const out = Buffer.alloc(16);
  const bytes = mac.split(":").map((h) => parseInt(h, 16));
  if (bytes.length !== 6 || bytes.some((b) => !Number.isInteger(b) || b < 0 || b > 255)) {
    throw new InvalidInputError(`not a MAC address: ${mac}`);
  }
  Buffer.from(bytes).copy(out, 0);
  return out;
}

export function u32Buffer(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

export function u16Buffer(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
}
