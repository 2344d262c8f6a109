// SNTPv4 (RFC 4330) client packets: the 48-byte request, the server's reply, the
// offset and round trip from the four timestamps, and the checks a reply must pass
// before a clock follows it (the ones Talos's NTP library applies).

import { InvalidInputError } from "../../errors.js";

export const NTP_PORT = 123;
const PACKET_LEN = 48;
/** Seconds from 1900-01-01 (NTP era 0) to 1970-01-01. */
const NTP_UNIX_DELTA = 2_208_988_800;
const TWO_32 = 2 ** 32;
const MAX_STRATUM = 16;
/** A server whose reference clock was last updated longer ago than this is stale (2^17 s, ~36 h). */
const MAX_FRESHNESS_MS = 2 ** 17 * 1000;
/** Root delay / 2 + root dispersion above this: too far from a reference to trust (16 s). */
const MAX_DISPERSION_MS = 16_000;

export type Leap = "none" | "insert" | "delete" | "unsynchronized";
const leapNames: Leap[] = ["none", "insert", "delete", "unsynchronized"];

/** The server answered, but its time must not be followed (kiss of death, unsynchronized, stale, ...). */
export class NtpResponseError extends InvalidInputError {}

/** A packet that is not the answer to our request (another mode, another origin); a later one may be. */
export class NtpReplyMismatchError extends InvalidInputError {}

export interface NtpReply {
  leap: Leap;
  version: number;
  mode: number;
  stratum: number;
  /** Reference id as 4 bytes: a kiss code or clock name for stratum 0/1, an address above. */
  referenceId: Buffer;
  rootDelayMs: number;
  rootDispersionMs: number;
  /** Timestamps in Unix milliseconds. */
  referenceTime: number;
  originTime: number;
  /** The origin field as sent: our request's transmit timestamp, bit for bit. */
  originRaw: Buffer;
  receiveTime: number;
  transmitTime: number;
}

export interface NtpMeasurement {
  /** How far the server is ahead of the local clock. */
  offsetMs: number;
  rttMs: number;
  leap: Leap;
  stratum: number;
  /** The server's clock when it answered (its transmit time). */
  serverTime: number;
}

/** Unix ms -> NTP 64-bit timestamp; (era 1 after 2036 wraps, as RFC 4330 §3 prescribes). */
export function writeTimestamp(buf: Buffer, offset: number, unixMs: number): void {
  const total = unixMs / 1000 + NTP_UNIX_DELTA;
  const seconds = Math.floor(total);
  buf.writeUInt32BE(seconds % TWO_32, offset);
  buf.writeUInt32BE(Math.floor((total - seconds) * TWO_32) % TWO_32, offset + 4);
}

export function readTimestamp(buf: Buffer, offset: number): number {
  let seconds = buf.readUInt32BE(offset);
  const fraction = buf.readUInt32BE(offset + 4);
  if (seconds === 0 && fraction === 0) return 0;
  // RFC 4330 §3: with the top bit clear the time is in era 1 (2036 onwards).
  if (seconds < 0x80000000) seconds += TWO_32;
  return (seconds - NTP_UNIX_DELTA) * 1000 + (fraction / TWO_32) * 1000;
}

/** NTP short format (16.16 seconds) -> ms. */
function readShort(buf: Buffer, offset: number): number {
  return (buf.readUInt32BE(offset) / 65536) * 1000;
}

/** A client request (LI 0, version 4, mode 3) carrying `transmitMs` as its transmit timestamp. */
export function encodeRequest(transmitMs: number): Buffer {
  const buf = Buffer.alloc(PACKET_LEN);
  buf[0] = (0 << 6) | (4 << 3) | 3;
  writeTimestamp(buf, 40, transmitMs);
  return buf;
}

export function decodeReply(buf: Buffer): NtpReply {
  if (buf.length < PACKET_LEN)
    throw new NtpReplyMismatchError(`NTP reply too short: ${buf.length} bytes`, { length: buf.length });
  const b0 = buf[0]!;
  return {
    leap: leapNames[b0 >> 6]!,
    version: (b0 >> 3) & 7,
    mode: b0 & 7,
    stratum: buf[1]!,
    referenceId: Buffer.from(buf.subarray(12, 16)),
    rootDelayMs: readShort(buf, 4),
    rootDispersionMs: readShort(buf, 8),
    referenceTime: readTimestamp(buf, 16),
    originTime: readTimestamp(buf, 24),
    originRaw: Buffer.from(buf.subarray(24, 32)),
    receiveTime: readTimestamp(buf, 32),
    transmitTime: readTimestamp(buf, 40),
  };
}

/**
 * Offset and round trip from the reply to a request sent at `sentMs` and received at
 * `receivedMs` (local clock): offset = ((T2 - T1) + (T3 - T4)) / 2, rtt = (T4 - T1) - (T3 - T2).
 * Throws NtpReplyMismatchError when the packet does not answer that request, NtpResponseError when
 * its time must not be followed.
 */
export function measure(reply: NtpReply, request: Buffer, sentMs: number, receivedMs: number): NtpMeasurement {
  if (reply.mode !== 4)
    throw new NtpReplyMismatchError(`NTP reply has mode ${reply.mode}, not 4 (server)`, { mode: reply.mode });
  if (!request.subarray(40, 48).equals(reply.originRaw))
    throw new NtpReplyMismatchError("NTP reply does not answer our request (origin timestamp differs)");
  if (reply.transmitTime === 0) throw new NtpResponseError("NTP reply has no transmit time");
  validate(reply);
  const t1 = sentMs;
  const t2 = reply.receiveTime;
  const t3 = reply.transmitTime;
  const t4 = receivedMs;
  return {
    offsetMs: (t2 - t1 + (t3 - t4)) / 2,
    rttMs: Math.max(0, t4 - t1 - (t3 - t2)),
    leap: reply.leap,
    stratum: reply.stratum,
    serverTime: t3,
  };
}

function validate(r: NtpReply): void {
  if (r.stratum === 0) {
    const code = r.referenceId.toString("latin1").replace(/\0+$/, "");
    throw new NtpResponseError(`kiss of death received: ${code}`, { kissCode: code });
  }
  if (r.stratum >= MAX_STRATUM)
    throw new NtpResponseError(`invalid stratum ${r.stratum} in response`, { stratum: r.stratum });
  if (r.transmitTime - r.referenceTime > MAX_FRESHNESS_MS)
    throw new NtpResponseError("server clock not fresh", { referenceTime: r.referenceTime });
  if (r.rootDelayMs / 2 + r.rootDispersionMs > MAX_DISPERSION_MS)
    throw new NtpResponseError("invalid dispersion", {
      rootDelayMs: r.rootDelayMs,
      rootDispersionMs: r.rootDispersionMs,
    });
  if (r.transmitTime < r.referenceTime)
    throw new NtpResponseError("invalid time reported", {
      transmitTime: r.transmitTime,
      referenceTime: r.referenceTime,
    });
  if (r.leap === "unsynchronized") throw new NtpResponseError("invalid leap second (server not synchronized)");
}
