import { constants, promises as fs } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** One /dev/kmsg record: "<prefix>,<seq>,<usec>,<flags>;<message>". */
export interface KmsgRecord {
  facility: number;
  priority: number;
  seq: number;
  /** Microseconds since boot. */
  usec: number;
  message: string;
}

export function parseKmsgRecord(line: string): KmsgRecord | undefined {
  const semi = line.indexOf(";");
  if (semi < 0) return undefined;
  const [prefix = "", seq = "", usec = ""] = line.slice(0, semi).split(",");
  const pri = Number(prefix);
  if (!Number.isInteger(pri)) return undefined;
  // Continuation lines (" KEY=value") after the first newline are dictionary data, not the message.
  const message = line.slice(semi + 1).split("\n")[0]!;
  return { facility: pri >> 3, priority: pri & 7, seq: Number(seq), usec: Number(usec), message };
}

/**
 * Reads the kernel log: every buffered record, then (follow) new ones as they come.
 * Non-blocking reads with a short poll, so a cancelled reader never leaves a thread
 * blocked in read(2).
 */
export async function* readKmsg(opts: { follow: boolean; skipExisting: boolean; signal: AbortSignal; file?: string; pollMs?: number }): AsyncGenerator<KmsgRecord> {
  const fh = await fs.open(opts.file ?? "/dev/kmsg", constants.O_RDONLY | constants.O_NONBLOCK);
  const buf = Buffer.alloc(8192);
  let draining = opts.skipExisting;
  try {
    while (!opts.signal.aborted) {
      let n: number;
      try {
        n = (await fh.read(buf, 0, buf.length, null)).bytesRead;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EPIPE") continue; // records were overwritten before we read them
        if (code !== "EAGAIN") throw err;
        n = -1;
      }
      if (n <= 0) {
        draining = false;
        if (!opts.follow) return;
        await sleep(opts.pollMs ?? 250, undefined, { signal: opts.signal }).catch(() => undefined);
        continue;
      }
      const rec = parseKmsgRecord(buf.subarray(0, n).toString("utf8"));
      if (rec && !draining) yield rec;
    }
  } finally {
    await fh.close();
  }
}
