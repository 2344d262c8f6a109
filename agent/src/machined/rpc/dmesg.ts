// MachineService.Dmesg (talosctl dmesg): each kernel record as one common.Data in
// Talos's layout "<facility>: <priority, width 7>: [<RFC 3339 time, ns>]: <text>".
// `tail` skips what is buffered (only new records), `follow` keeps streaming; a record
// that cannot be parsed is sent as an entry with metadata.error.

import type * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { SystemError } from "../../errors.js";
import { kmsgFacilities, kmsgPriorities, openKmsg, readKmsg, type KmsgRecord } from "../../sys/kmsg.js";
import { pathErrorText } from "./errno.js";
import { cancellation, send } from "./stream.js";

const facilities = kmsgFacilities;
const priorities = kmsgPriorities;

export interface DmesgRequest {
  follow?: boolean;
  tail?: boolean;
}

/** Boot time in nanoseconds since the epoch: now minus the whole seconds of uptime, as Talos takes it from sysinfo(2). */
export function bootTimeNs(uptimeText = readFileSync("/proc/uptime", "utf8"), nowMs = Date.now()): bigint {
  const uptimeSeconds = Math.floor(Number(uptimeText.split(" ")[0]));
  return BigInt(nowMs) * 1_000_000n - BigInt(uptimeSeconds) * 1_000_000_000n;
}

/** Go's time.RFC3339Nano in UTC: fraction to nanoseconds with trailing zeros (and a bare dot) dropped. */
export function rfc3339Nano(ns: bigint): string {
  const ms = ns / 1_000_000n;
  const base = new Date(Number(ms)).toISOString().slice(0, 19);
  const fraction = (((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n)
    .toString()
    .padStart(9, "0")
    .replace(/0+$/, "");
  return `${base}${fraction ? "." + fraction : ""}Z`;
}

export function formatKmsg(rec: KmsgRecord, bootNs: bigint): string {
  const facility = facilities[rec.facility] ?? String(rec.facility);
  const priority = priorities[rec.priority]!.padStart(7);
  return `${facility}: ${priority}: [${rfc3339Nano(bootNs + BigInt(rec.usec) * 1000n)}]: ${rec.message}`;
}

/** Opens the kernel log for reading, failing with Talos's words for Dmesg. */
async function openKmsgReader(kmsgFile: string): ReturnType<typeof openKmsg> {
  return openKmsg(kmsgFile).catch((err: unknown) => {
    throw new SystemError(`error opening /dev/kmsg reader: ${pathErrorText("open", kmsgFile, err)}`, {
      file: kmsgFile,
    });
  });
}

/**
 * The kernel log as Dmesg's lines, from the first record, followed until `signal` aborts (the dashboard's
 * pane, as Talos's follows Dmesg). A record that cannot be parsed is left out, as talosctl leaves out an
 * error entry; a failed read ends the lines with that error.
 */
export async function* dmesgLines(signal: AbortSignal, kmsgFile = "/dev/kmsg"): AsyncGenerator<string> {
  const boot = bootTimeNs();
  const fh = await openKmsgReader(kmsgFile);
  let lastError: string | undefined;
  try {
    for await (const p of readKmsg(fh, { follow: true, fromTail: false, signal })) {
      if ("record" in p) yield formatKmsg(p.record, boot);
      else lastError = p.error;
    }
  } finally {
    await fh.close();
  }
  if (lastError !== undefined && !signal.aborted) throw new SystemError(lastError, { file: kmsgFile });
}

/** Streams the kernel log until it is read (or, with follow, until the client cancels). */
export async function streamDmesg(
  call: grpc.ServerWritableStream<DmesgRequest, unknown>,
  kmsgFile = "/dev/kmsg",
): Promise<void> {
  const boot = bootTimeNs();
  const fh = await openKmsgReader(kmsgFile);
  const { signal, dispose } = cancellation(call);
  try {
    for await (const p of readKmsg(fh, {
      follow: call.request.follow === true,
      fromTail: call.request.tail === true,
      signal,
    })) {
      const message =
        "record" in p ? { bytes: Buffer.from(formatKmsg(p.record, boot)) } : { metadata: { error: p.error } };
      if (!(await send(call, message))) return;
    }
  } finally {
    dispose();
    await fh.close();
  }
  if (!call.cancelled) call.end();
}
