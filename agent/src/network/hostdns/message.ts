// Just enough of the DNS wire format (RFC 1035) for a caching forwarder: the
// question a query asks (the cache key), the TTLs of a reply's records (how long it
// may be cached, and where to lower them when served from the cache), and the
// SERVFAIL answer given when no upstream answers.

import { InvalidInputError } from "../../errors.js";

export class DnsMessageError extends InvalidInputError {}

export const RCODE_NOERROR = 0;
export const RCODE_SERVFAIL = 2;
export const RCODE_NXDOMAIN = 3;
const TYPE_SOA = 6;
const TYPE_OPT = 41;
const HEADER_LEN = 12;

export interface DnsQuestion {
  /** Lower-cased, dot-separated, without the trailing dot ("" for the root). */
  name: string;
  type: number;
  class: number;
}

export interface DnsReplyInfo {
  rcode: number;
  truncated: boolean;
  answerCount: number;
  /** Byte offsets of every TTL field (OPT pseudo-records excluded) and their values. */
  ttls: { offset: number; ttl: number }[];
  /** TTL of the SOA record in the authority section (negative answers), if any. */
  soaTtl?: number;
}

function need(buf: Buffer, end: number): void {
  if (end > buf.length) throw new DnsMessageError("DNS message truncated", { length: buf.length, need: end });
}

/** Reads a (possibly compressed) name at `offset`; returns it and the offset after it in the message. */
function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = offset;
  let next = -1;
  for (let jumps = 0; ; ) {
    need(buf, pos + 1);
    const len = buf[pos]!;
    if (len === 0) {
      pos += 1;
      break;
    }
    if ((len & 0xc0) === 0xc0) {
      need(buf, pos + 2);
      if (next < 0) next = pos + 2;
      if (++jumps > 64) throw new DnsMessageError("DNS name compression loop");
      pos = buf.readUInt16BE(pos) & 0x3fff;
      continue;
    }
    if (len > 63) throw new DnsMessageError(`bad DNS label length ${len}`);
    need(buf, pos + 1 + len);
    labels.push(buf.toString("latin1", pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  return { name: labels.join(".").toLowerCase(), next: next >= 0 ? next : pos };
}

export function messageId(buf: Buffer): number {
  need(buf, HEADER_LEN);
  return buf.readUInt16BE(0);
}

export function isResponse(buf: Buffer): boolean {
  need(buf, HEADER_LEN);
  return (buf[2]! & 0x80) !== 0;
}

/** The one question of a query (the cache key); throws DnsMessageError when there is not exactly one. */
export function readQuestion(buf: Buffer): DnsQuestion {
  need(buf, HEADER_LEN);
  const qd = buf.readUInt16BE(4);
  if (qd !== 1) throw new DnsMessageError(`DNS query with ${qd} questions`, { questions: qd });
  const { name, next } = readName(buf, HEADER_LEN);
  need(buf, next + 4);
  return { name, type: buf.readUInt16BE(next), class: buf.readUInt16BE(next + 2) };
}

/** Walks a reply's records for its rcode and TTLs. */
export function readReply(buf: Buffer): DnsReplyInfo {
  need(buf, HEADER_LEN);
  const counts = [buf.readUInt16BE(4), buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)];
  const info: DnsReplyInfo = {
    rcode: buf[3]! & 0x0f,
    truncated: (buf[2]! & 0x02) !== 0,
    answerCount: counts[1]!,
    ttls: [],
  };
  let pos = HEADER_LEN;
  for (let i = 0; i < counts[0]!; i++) pos = readName(buf, pos).next + 4;
  for (let section = 1; section <= 3; section++) {
    for (let i = 0; i < counts[section]!; i++) {
      pos = readName(buf, pos).next;
      need(buf, pos + 10);
      const type = buf.readUInt16BE(pos);
      const ttl = buf.readUInt32BE(pos + 4);
      const rdlen = buf.readUInt16BE(pos + 8);
      if (type !== TYPE_OPT) {
        info.ttls.push({ offset: pos + 4, ttl });
        if (section === 2 && type === TYPE_SOA) info.soaTtl = Math.min(ttl, soaMinimum(buf, pos + 10, rdlen));
      }
      pos += 10 + rdlen;
      need(buf, pos);
    }
  }
  return info;
}

// RFC 2308: a negative answer lives min(SOA TTL, SOA MINIMUM).
function soaMinimum(buf: Buffer, rdata: number, rdlen: number): number {
  const end = rdata + rdlen;
  need(buf, end);
  return buf.readUInt32BE(end - 4);
}

/** A copy of `reply` with the query's id and every TTL lowered by `elapsedS`. */
export function rewriteReply(reply: Buffer, id: number, ttls: DnsReplyInfo["ttls"], elapsedS: number): Buffer {
  const out = Buffer.from(reply);
  out.writeUInt16BE(id, 0);
  for (const t of ttls) out.writeUInt32BE(Math.max(0, t.ttl - elapsedS), t.offset);
  return out;
}

/** A SERVFAIL reply to `query` (its id, flags and question echoed, no records). */
export function servfail(query: Buffer): Buffer {
  let end = HEADER_LEN;
  try {
    if (query.readUInt16BE(4) >= 1) end = readName(query, HEADER_LEN).next + 4;
  } catch {
    end = HEADER_LEN;
  }
  const out = Buffer.alloc(Math.min(end, query.length));
  query.copy(out, 0, 0, out.length);
  // QR=1, keep opcode and RD, RA=1, rcode SERVFAIL.
  out[2] = 0x80 | (query[2]! & 0x79);
  out[3] = 0x80 | RCODE_SERVFAIL;
  out.writeUInt16BE(end > HEADER_LEN ? 1 : 0, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}
