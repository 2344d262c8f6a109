// DHCPv6 messages (RFC 8415 §8, §21): type, 24-bit transaction id and options, with
// the options a client needs: client/server DUIDs, IA_NA with its addresses, the
// option request, elapsed time, status, rapid commit, DNS servers and search list
// (RFC 3646), NTP servers (RFC 5908), and the client FQDN (RFC 4704).

import { InvalidInputError } from "../../errors.js";
import { ipv6Text } from "../../sys/ip-text.js";

export class Dhcp6PacketError extends InvalidInputError {}

export const CLIENT_PORT = 546;
export const SERVER_PORT = 547;
/** All_DHCP_Relay_Agents_and_Servers. */
export const ALL_SERVERS = "ff02::1:2";

export enum MessageType {
  Solicit = 1,
  Advertise = 2,
  Request = 3,
  Confirm = 4,
  Renew = 5,
  Rebind = 6,
  Reply = 7,
  Release = 8,
}

export enum Option {
  ClientId = 1,
  ServerId = 2,
  IaNa = 3,
  IaAddr = 5,
  Oro = 6,
  Preference = 7,
  ElapsedTime = 8,
  StatusCode = 13,
  RapidCommit = 14,
  DnsServers = 23,
  DomainList = 24,
  Fqdn = 39,
  NtpServer = 56,
}

export const STATUS_SUCCESS = 0;
export const STATUS_NO_ADDRS_AVAIL = 2;
const NTP_SUBOPTION_SERVER_ADDRESS = 1;
const NTP_SUBOPTION_SERVER_FQDN = 3;

export interface Dhcp6Message {
  type: MessageType;
  transactionId: number;
  /** Options in order; an option code may repeat. */
  options: [number, Buffer][];
}

export interface IaAddress {
  address: string;
  preferredLifetime: number;
  validLifetime: number;
}

export interface IaNa {
  iaid: number;
  t1: number;
  t2: number;
  addresses: IaAddress[];
  status?: { code: number; message: string };
}

export function encodeMessage(m: Dhcp6Message): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(((m.type & 0xff) << 24) | (m.transactionId & 0xffffff));
  return Buffer.concat([head, encodeOptions(m.options)]);
}

export function encodeOptions(options: [number, Buffer][]): Buffer {
  return Buffer.concat(
    options.map(([code, value]) => {
      const h = Buffer.alloc(4);
      h.writeUInt16BE(code, 0);
      h.writeUInt16BE(value.length, 2);
      return Buffer.concat([h, value]);
    }),
  );
}

export function decodeOptions(buf: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (pos + 4 > buf.length) throw new Dhcp6PacketError("DHCPv6 option header truncated", { offset: pos });
    const code = buf.readUInt16BE(pos);
    const len = buf.readUInt16BE(pos + 2);
    if (pos + 4 + len > buf.length)
      throw new Dhcp6PacketError(`DHCPv6 option ${code} truncated`, { code, length: len });
    out.push([code, Buffer.from(buf.subarray(pos + 4, pos + 4 + len))]);
    pos += 4 + len;
  }
  return out;
}

export function decodeMessage(buf: Buffer): Dhcp6Message {
  if (buf.length < 4) throw new Dhcp6PacketError(`DHCPv6 message too short: ${buf.length} bytes`);
  const head = buf.readUInt32BE(0);
  return { type: head >>> 24, transactionId: head & 0xffffff, options: decodeOptions(buf.subarray(4)) };
}

export function option(m: Dhcp6Message, code: number): Buffer | undefined {
  return m.options.find(([c]) => c === code)?.[1];
}

/** DUID-LL (type 3): hardware type 1 (Ethernet) and the link's MAC. */
export function duidLL(hardwareAddr: string): Buffer {
  const mac = Buffer.from(hardwareAddr.split(":").map((h) => parseInt(h, 16)));
  return Buffer.concat([Buffer.from([0, 3, 0, 1]), mac]);
}

export function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}

/** An IA_NA asking for any address (or, renewing, naming the ones held). */
export function encodeIaNa(iaid: number, addresses: IaAddress[] = [], t1 = 0, t2 = 0): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt32BE(iaid, 0);
  head.writeUInt32BE(t1, 4);
  head.writeUInt32BE(t2, 8);
  const inner = addresses.map((a): [number, Buffer] => {
    const v = Buffer.alloc(24);
    ipv6Bytes(a.address).copy(v, 0);
    v.writeUInt32BE(a.preferredLifetime, 16);
    v.writeUInt32BE(a.validLifetime, 20);
    return [Option.IaAddr, v];
  });
  return Buffer.concat([head, encodeOptions(inner)]);
}

export function decodeIaNa(value: Buffer): IaNa {
  if (value.length < 12) throw new Dhcp6PacketError("IA_NA option too short");
  const ia: IaNa = { iaid: value.readUInt32BE(0), t1: value.readUInt32BE(4), t2: value.readUInt32BE(8), addresses: [] };
  for (const [code, v] of decodeOptions(value.subarray(12))) {
    if (code === Option.IaAddr && v.length >= 24) {
      const inner = decodeOptions(v.subarray(24));
      const status = inner.find(([c]) => c === Option.StatusCode)?.[1];
      // An address whose status is not Success is not given.
      if (status && decodeStatus(status).code !== STATUS_SUCCESS) continue;
      ia.addresses.push({
        address: ipv6Text(v.subarray(0, 16)),
        preferredLifetime: v.readUInt32BE(16),
        validLifetime: v.readUInt32BE(20),
      });
    } else if (code === Option.StatusCode) {
      ia.status = decodeStatus(v);
    }
  }
  return ia;
}

export function decodeStatus(v: Buffer): { code: number; message: string } {
  if (v.length < 2) throw new Dhcp6PacketError("status code option too short");
  return { code: v.readUInt16BE(0), message: v.subarray(2).toString("utf8") };
}

export function decodeAddresses(v: Buffer): string[] {
  const out: string[] = [];
  for (let i = 0; i + 16 <= v.length; i += 16) out.push(ipv6Text(v.subarray(i, i + 16)));
  return out;
}

/** RFC 1035 §3.1 names without compression (RFC 8415 §10): labels to dotted strings. */
export function decodeDomainNames(v: Buffer): string[] {
  const out: string[] = [];
  let labels: string[] = [];
  for (let pos = 0; pos < v.length; ) {
    const len = v[pos]!;
    pos++;
    if (len === 0) {
      out.push(labels.join("."));
      labels = [];
      continue;
    }
    labels.push(v.toString("latin1", pos, pos + len));
    pos += len;
  }
  // A partial name (no terminating zero, as RFC 4704 allows for the FQDN) counts too.
  if (labels.length > 0) out.push(labels.join("."));
  return out;
}

/** NTP server option: server addresses (suboption 1) and names (suboption 3). */
export function decodeNtpServers(v: Buffer): string[] {
  const out: string[] = [];
  for (const [code, sub] of decodeOptions(v)) {
    if (code === NTP_SUBOPTION_SERVER_ADDRESS && sub.length === 16) out.push(ipv6Text(sub));
    if (code === NTP_SUBOPTION_SERVER_FQDN) out.push(...decodeDomainNames(sub));
  }
  return out;
}

export function ipv6Bytes(addr: string): Buffer {
  const [head, tail] = addr.split("::") as [string, string | undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill("0"), ...t];
  if (groups.length !== 8) throw new Dhcp6PacketError(`not an IPv6 address: ${JSON.stringify(addr)}`);
  const buf = Buffer.alloc(16);
  groups.forEach((g, i) => buf.writeUInt16BE(parseInt(g, 16), i * 2));
  return buf;
}
