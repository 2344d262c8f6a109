// Every service's log as Talos keeps them: a bounded ring in memory per id (1 MiB,
// oldest lines dropped), kept across restarts of the service, copied to
// <dir>/<id>.log once a place for them is mounted (EPHEMERAL's /var/log), and
// readable with a tail and a follow (MachineService.Logs).

import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import path from "node:path";
import { BasaltError } from "../errors.js";

/** Talos's plain error for an id nothing has written to (gRPC Unknown). */
export class LogNotRegisteredError extends BasaltError {}

export interface LogWriter {
  write(chunk: Buffer | string): void;
  /** Ends a last line the writer left without a newline (its process exited). */
  flush(): void;
}

/** Talos caps each service log at 1 MiB. */
export const maxLogBytes = 1024 * 1024;

type Follower = (line: Buffer) => void;

class ServiceLog {
  private lines: Buffer[] = [];
  private bytes = 0;
  private readonly followers = new Set<Follower>();
  private file: WriteStream | undefined;

  constructor(private readonly maxBytes: number) {}

  /** The last `tailLines` lines (all of them when negative). */
  tail(tailLines: number): Buffer[] {
    if (tailLines < 0) return [...this.lines];
    return tailLines === 0 ? [] : this.lines.slice(-tailLines);
  }

  follow(follower: Follower): () => void {
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }

  spillTo(file: string): void {
    if (this.file) return;
    this.file = createWriteStream(file, { flags: "a" });
    this.file.on("error", () => undefined); // a full or vanished /var only loses the copy; the ring keeps the log
    for (const line of this.lines) this.file.write(line);
  }

  close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    return new Promise((resolve) => (file ? file.end(resolve) : resolve()));
  }

  append(line: Buffer): void {
    this.lines.push(line);
    this.bytes += line.length;
    while (this.bytes > this.maxBytes && this.lines.length > 1) this.bytes -= this.lines.shift()!.length;
    this.file?.write(line);
    for (const f of this.followers) f(line);
  }
}

/** Sees every line of every log as it is written. */
export type LineListener = (id: string, line: Buffer) => void;

export class ServiceLogs {
  private readonly logs = new Map<string, ServiceLog>();
  private readonly lineListeners = new Set<LineListener>();
  private spillDir: string | undefined;

  private readonly maxBytes: number;
  private readonly echo: ((id: string, line: Buffer) => void) | undefined;

  /** `maxBytes` bounds each log held in memory; `echo` also gets every line (the sandbox prints its services' logs on its own stderr). */
  constructor(opts: { maxBytes?: number; echo?: (id: string, line: Buffer) => void } = {}) {
    this.maxBytes = opts.maxBytes ?? maxLogBytes;
    this.echo = opts.echo;
  }

  /** The writer of `id`'s log, registering it (as Talos, only writing registers a log). */
  writer(id: string): LogWriter {
    const log = this.get(id, true);
    const append = (line: Buffer) => {
      log.append(line);
      this.echo?.(id, line);
      for (const l of this.lineListeners) l(id, line);
    };
    // Each writer keeps its own unfinished line, so two streams (stdout, stderr) never splice one line.
    let partial = Buffer.alloc(0);
    return {
      write: (chunk) => {
        let data = Buffer.concat([partial, typeof chunk === "string" ? Buffer.from(chunk) : chunk]);
        for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10)) {
          append(Buffer.from(data.subarray(0, nl + 1)));
          data = data.subarray(nl + 1);
        }
        partial = Buffer.from(data);
      },
      flush: () => {
        if (partial.length === 0) return;
        append(Buffer.concat([partial, Buffer.from("\n")]));
        partial = Buffer.alloc(0);
      },
    };
  }

  /** Calls `listener` with every line written from now on (log shipping); returns the unsubscribe. */
  onLine(listener: LineListener): () => void {
    this.lineListeners.add(listener);
    return () => this.lineListeners.delete(listener);
  }

  /** Every line held now, log by log (what log shipping sends first). */
  held(): [string, Buffer][] {
    return [...this.logs.entries()].flatMap(([id, log]) => log.tail(-1).map((line): [string, Buffer] => [id, line]));
  }

  /** Registered ids, sorted. */
  ids(): string[] {
    return [...this.logs.keys()].sort();
  }

  /** The last `tailLines` lines of `id` (all when negative), and when `follow` is given, every later line to it until the returned function is called. */
  read(id: string, tailLines: number, follow?: Follower): { lines: Buffer[]; stop: () => void } {
    const log = this.get(id, false);
    // Snapshot and subscription in one turn: no line falls between them.
    const lines = log.tail(tailLines);
    const stop = follow ? log.follow(follow) : () => undefined;
    return { lines, stop };
  }

  /** From now on, each log is also appended to `dir`/<id>.log (what it holds so far first). */
  spillTo(dir: string): void {
    mkdirSync(dir, { recursive: true });
    this.spillDir = dir;
    for (const [id, log] of this.logs) log.spillTo(path.join(dir, `${id}.log`));
  }

  /** Ends the copies on disk (before their filesystem is unmounted). */
  async closeFiles(): Promise<void> {
    this.spillDir = undefined;
    await Promise.all([...this.logs.values()].map((l) => l.close()));
  }

  private get(id: string, create: boolean): ServiceLog {
    let log = this.logs.get(id);
    if (!log) {
      if (!create) throw new LogNotRegisteredError(`log ${JSON.stringify(id)} was not registered`, { id });
      log = new ServiceLog(this.maxBytes);
      this.logs.set(id, log);
      if (this.spillDir) log.spillTo(path.join(this.spillDir, `${id}.log`));
    }
    return log;
  }
}
