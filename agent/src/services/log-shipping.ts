// machine.logging.destinations as Talos sends them: every service log line (machined's
// included) as one JSON object per line over TCP, or per datagram over UDP, with its
// fields (a JSON line's own, else the text as msg), talos-service, talos-time, talos-level
// and the destination's extraTags. What was logged before the destinations were set is sent
// first, as Talos's senders start from the start of each buffer.

import dgram from "node:dgram";
import net from "node:net";
import { InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import { readFileSync } from "node:fs";
import { kmsgFacilities, kmsgPriorities, openKmsg, readKmsg, type KmsgRecord } from "../sys/kmsg.js";
import type { ServiceLogs } from "./logs.js";

const log = logger("logging");

export interface LogDestination {
  /** udp://host:port/ or tcp://host:port/ */
  endpoint: string;
  format: "json_lines";
  extraTags?: Record<string, string>;
}

/** The record Talos's json_lines sender writes for one log line of service `id`. */
export function jsonLinesRecord(
  id: string,
  line: string,
  extraTags: Record<string, string> = {},
  now = new Date(),
): Record<string, unknown> {
  const text = line.replace(/\n$/, "");
  let fields: Record<string, unknown> = {};
  let msg = text;
  let time = now;
  let level = "info";
  if (text.startsWith("{")) {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
        fields = { ...(parsed as Record<string, unknown>) };
        msg = "";
        for (const k of ["time", "ts"]) {
          const t = typeof fields[k] === "string" ? new Date(fields[k] as string) : undefined;
          if (t && !Number.isNaN(t.getTime())) {
            time = t;
            delete fields[k];
            break;
          }
        }
        if (typeof fields["level"] === "string") {
          level =
            (fields["level"] as string).toLowerCase() === "warning"
              ? "warn"
              : (fields["level"] as string).toLowerCase();
          delete fields["level"];
        }
        if (typeof fields["msg"] === "string") msg = fields["msg"] as string;
      }
    } catch {
      // not JSON after all: the text is the message
    }
  }
  return { ...fields, "talos-service": id, msg, "talos-time": time.toISOString(), "talos-level": level, ...extraTags };
}

export interface Sender {
  send(record: Record<string, unknown>): void;
  close(): void;
}

export function logSender(dest: LogDestination): Sender {
  // Warned once per failing spell: the warning is a log line too, shipped (and failing) again.
  let failing = false;
  const failed = (err: Error) => {
    if (failing) return;
    // Set first: the warning is shipped too, and a send that fails at once would come back here.
    failing = true;
    log.warn("sending logs failed", { endpoint: dest.endpoint, error: err });
  };
  const sent = () => (failing = false);
  let url: URL;
  try {
    url = new URL(dest.endpoint);
  } catch (err) {
    throw new InvalidInputError(
      `logging destination ${JSON.stringify(dest.endpoint)} is not a URL`,
      { endpoint: dest.endpoint },
      { cause: err },
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port);
  if (url.protocol === "udp:") {
    const sock = dgram.createSocket(net.isIPv6(host) ? "udp6" : "udp4");
    sock.on("error", failed);
    sock.unref();
    return {
      send: (record) => {
        // An endpoint without a port (Talos accepts udp://host) makes send throw; every log line passes here.
        try {
          sock.send(Buffer.from(JSON.stringify(record)), port, host, (err) => (err ? failed(err) : sent()));
        } catch (err) {
          failed(err as Error);
        }
      },
      close: () => sock.close(),
    };
  }
  if (url.protocol === "tcp:") {
    // One connection, opened again after a failure; what is written meanwhile waits in its buffer (a failed write is dropped).
    let conn: net.Socket | undefined;
    const connect = () => {
      const c = net.connect({ host, port });
      c.on("error", (err) => {
        failed(err);
        if (conn === c) conn = undefined;
      });
      c.on("connect", sent);
      c.on("close", () => {
        if (conn === c) conn = undefined;
      });
      c.unref();
      return c;
    };
    return {
      send: (record) => {
        conn ??= connect();
        conn.write(JSON.stringify(record) + "\n");
      },
      close: () => {
        conn?.end();
        conn = undefined;
      },
    };
  }
  throw new InvalidInputError(`logging destination ${JSON.stringify(dest.endpoint)}: the scheme must be udp or tcp`, {
    endpoint: dest.endpoint,
  });
}

/** Ships every service log line to the configured destinations; configure() replaces them. */
export class LogShipper {
  private senders: { dest: LogDestination; sender: Sender }[] = [];
  private off: (() => void) | undefined;

  constructor(private readonly logs: ServiceLogs) {}

  configure(destinations: readonly LogDestination[]): void {
    const key = (d: LogDestination) => JSON.stringify(d);
    if (destinations.map(key).join() === this.senders.map((s) => key(s.dest)).join()) return;
    const first = this.senders.length === 0;
    for (const s of this.senders) s.sender.close();
    this.senders = destinations.map((dest) => ({ dest, sender: logSender(dest) }));
    if (this.senders.length === 0) {
      this.off?.();
      this.off = undefined;
      return;
    }
    if (first) for (const [id, line] of this.logs.held()) this.ship(id, line);
    this.off ??= this.logs.onLine((id, line) => this.ship(id, line));
  }

  close(): void {
    this.configure([]);
  }

  private ship(id: string, line: Buffer): void {
    const text = line.toString("utf8");
    if (text.trim() === "") return;
    for (const { dest, sender } of this.senders) sender.send(jsonLinesRecord(id, text, dest.extraTags));
  }
}

/** Talos's level for a kernel priority (emerg..err: error, warning: warn, notice/info: info, debug). */
const kernelLevels = ["error", "error", "error", "error", "warn", "info", "info", "debug"];

/** The json_lines record Talos sends for a kernel record (talos.logging.kernel=). */
export function kernelRecord(rec: KmsgRecord, bootMs: number): Record<string, unknown> {
  return {
    clock: rec.usec,
    facility: kmsgFacilities[rec.facility] ?? String(rec.facility),
    msg: rec.message.replace(/\n$/, ""),
    priority: kmsgPriorities[rec.priority],
    seq: rec.seq,
    "talos-level": kernelLevels[rec.priority],
    "talos-time": new Date(bootMs + rec.usec / 1000).toISOString(),
  };
}

/** Sends every kernel record (the buffered ones first) to `endpoint` until `signal` fires. */
export async function shipKernelLog(
  endpoint: string,
  signal: AbortSignal,
  kmsgFile = "/dev/kmsg",
  bootMs = Date.now() - uptimeMs(),
): Promise<void> {
  const out = logSender({ endpoint, format: "json_lines" });
  const fh = await openKmsg(kmsgFile);
  try {
    for await (const p of readKmsg(fh, { follow: true, fromTail: false, signal })) {
      if ("record" in p) out.send(kernelRecord(p.record, bootMs));
    }
  } finally {
    out.close();
    await fh.close();
  }
}

function uptimeMs(): number {
  return Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
}
