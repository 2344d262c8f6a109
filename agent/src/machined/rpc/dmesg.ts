// Dmesg: the kernel log, formatted as Talos formats each record for talosctl dmesg.

import type * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { readKmsg, type KmsgRecord } from "../../sys/kmsg.js";

const facilities = ["kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp"];
const priorities = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"];

/** When the machine booted, for the records' wall-clock time. */
export function bootTimeMs(uptimeFile = "/proc/uptime"): number {
  return Date.now() - Number(readFileSync(uptimeFile, "utf8").split(" ")[0]) * 1000;
}

/** "<facility>: <priority, padded to 7>: [<RFC 3339 time>]: <message>" */
export function formatKmsg(rec: KmsgRecord, bootMs: number): string {
  const facility = facilities[rec.facility] ?? `local${rec.facility - 16}`;
  const priority = (priorities[rec.priority] ?? String(rec.priority)).padStart(7);
  const at = new Date(bootMs + rec.usec / 1000).toISOString();
  return `${facility}: ${priority}: [${at}]: ${rec.message}`;
}

export async function streamDmesg(call: grpc.ServerWritableStream<{ follow?: boolean; tail?: boolean }, unknown>, file?: string): Promise<void> {
  const ac = new AbortController();
  const cancel = () => ac.abort();
  call.once("cancelled", cancel);
  const boot = bootTimeMs();
  try {
    // tail: only what arrives from now on (with follow, as talosctl's --tail means it).
    for await (const rec of readKmsg({ follow: call.request.follow === true, skipExisting: call.request.tail === true, signal: ac.signal, ...(file ? { file } : {}) })) {
      if (!call.write({ bytes: Buffer.from(formatKmsg(rec, boot)) })) await new Promise((resolve) => call.once("drain", resolve));
    }
  } finally {
    call.off("cancelled", cancel);
  }
  call.end();
}
