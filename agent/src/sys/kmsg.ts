// The kernel log device: /dev/kmsg records ("<prefix>,<seq>,<usec>,<flags>[,...];<text>\n[ KEY=value\n]...",
// Documentation/ABI/testing/dev-kmsg), read without ever blocking in read(2).

import { constants, promises as fs, readSync, type promises } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidInputError } from "../errors.js";

export interface KmsgRecord {
  facility: number;
  priority: number;
  seq: number;
  /** Microseconds since boot. */
  usec: number;
  /** Everything after ";" with the kernel's \xNN escapes decoded (trailing newline and KEY=value lines kept, as Talos keeps them). */
  message: string;
}

/** The kernel escapes non-printable bytes as \xNN and "\" as "\\"; other escapes are dropped. Without escapes, `text` itself. */
export function unescapeKmsg(text: Buffer): Buffer {
  // Most records have no escape: nothing to copy byte by byte.
  if (!text.includes(0x5c)) return text;
  const out: number[] = [];
  const hex = (c: number | undefined) => {
    if (c === undefined) return -1;
    const ch = String.fromCharCode(c);
    return /[0-9a-fA-F]/.test(ch) ? parseInt(ch, 16) : -1;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c !== 0x5c) {
      out.push(c);
      continue;
    }
    const next = text[i + 1];
    if (next === 0x5c) {
      out.push(0x5c);
      i += 1;
    } else if (next === 0x78) {
      const hi = hex(text[i + 2]);
      const lo = hi < 0 ? -1 : hex(text[i + 3]);
      if (lo >= 0) out.push(hi * 16 + lo);
      i += hi < 0 ? 2 : 3;
    } else {
      i += 1;
    }
  }
  return Buffer.from(out);
}

/** Parses one record; the errors read as Talos's kmsg reader words them. */
export function parseKmsgRecord(raw: Buffer): KmsgRecord {
  const semi = raw.indexOf(0x3b);
  if (semi < 0) throw new InvalidInputError("kernel message should contain a prefix");
  const fields = raw.subarray(0, semi).toString("latin1").split(",");
  if (fields.length < 3)
    throw new InvalidInputError(`message metdata should have at least 3 parts, got ${fields.length}`);
  const int = (s: string, what: string) => {
    if (!/^[+-]?\d+$/.test(s))
      throw new InvalidInputError(`${what}: strconv.ParseInt: parsing ${JSON.stringify(s)}: invalid syntax`);
    return Number(s);
  };
  const pri = int(fields[0]!, "error parsing priority");
  return {
    facility: pri >> 3,
    priority: pri & 7,
    seq: int(fields[1]!, "error parsing sequence"),
    usec: int(fields[2]!, "errors parsing clock from boot"),
    message: unescapeKmsg(raw.subarray(semi + 1)).toString("utf8"),
  };
}

// Talos's (go-kmsg's) names by index: local0 follows authpriv at 11 (not syslog's 16), so the same records read the same.
export const kmsgFacilities = [
  "kern",
  "user",
  "mail",
  "daemon",
  "auth",
  "syslog",
  "lpr",
  "news",
  "uucp",
  "cron",
  "authpriv",
  ...Array.from({ length: 8 }, (_, i) => `local${i}`),
];
export const kmsgPriorities = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

/** A record, or the reason one could not be parsed (sent on as an error entry, not ending the stream). */
export type KmsgPacket = { record: KmsgRecord } | { error: string };

export interface KmsgReadOptions {
  /** Keep reading new records as they arrive, until the signal fires. */
  follow: boolean;
  /** Skip what is buffered now: only records logged from now on. */
  fromTail: boolean;
  signal: AbortSignal;
  pollMs?: number;
}

const readsPerTurn = 8;

/** Opens the kernel log for non-blocking reads; the caller closes it. */
export function openKmsg(file = "/dev/kmsg"): Promise<promises.FileHandle> {
  return fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
}

/**
 * Reads the kernel log from a handle openKmsg gave. Non-blocking reads with a short poll
 * while following, so a cancelled reader never leaves a libuv thread blocked in read(2).
 * A failed read ends the log with an error packet, as Talos's reader ends it.
 */
export async function* readKmsg(fh: promises.FileHandle, opts: KmsgReadOptions): AsyncGenerator<KmsgPacket> {
  const buf = Buffer.alloc(8192);
  let skipping = opts.fromTail;
  let sinceYield = 0;
  while (!opts.signal.aborted) {
    // A read of the non-blocking handle returns at once (a record, or EAGAIN), so it is made here rather than
    // through libuv's thread pool: a boot's backlog of ~1,000 records cost the dashboard's start a promise and a
    // thread hop each, time machined's loop shares with the links and DHCP. The loop still gets a turn every few
    // records: read 128 at a time, the dashboard's backlog held up the links and DHCP it shares the loop with.
    if (++sinceYield >= readsPerTurn) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    let n: number;
    try {
      n = readSync(fh.fd, buf, 0, buf.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EPIPE") continue; // records were overwritten before we read them; the next read resumes
      if (code !== "EAGAIN") {
        yield { error: `error reading from kmsg: ${(err as Error).message}` };
        return;
      }
      n = 0;
    }
    if (n === 0) {
      skipping = false;
      if (!opts.follow) return;
      await sleep(opts.pollMs ?? 250, undefined, { signal: opts.signal }).catch(() => undefined);
      continue;
    }
    if (skipping) continue;
    try {
      yield { record: parseKmsgRecord(buf.subarray(0, n)) };
    } catch (err) {
      yield { error: (err as Error).message };
    }
  }
}
