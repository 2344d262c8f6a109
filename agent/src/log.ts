// Structured logging: one JSON object per line on stderr (or a custom sink), each
// carrying the component and any fields. Kept tiny on purpose: it runs at boot.

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;
export type LogSink = (line: string) => void;

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let sink: LogSink = (line) => process.stderr.write(line + "\n");
let minLevel: LogLevel = (process.env.BASALT_LOG_LEVEL as LogLevel | undefined) ?? "info";
// "console" renders `[basalt] component: msg {fields}` for a human at the node's console.
let format: "json" | "console" = process.env.BASALT_LOG_FORMAT === "console" ? "console" : "json";

export function setLogFormat(next: "json" | "console"): void {
  format = next;
}

/** Replaces where lines go; returns the previous sink so a caller (a test) can put it back. */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

/** Also receives every line, as `2006/01/02 15:04:05.000000 [basalt] component: msg {fields}` (machined's own service log). */
export type LogTap = (line: string, component: string) => void;
const taps = new Set<LogTap>();

export function addLogTap(tap: LogTap): () => void {
  taps.add(tap);
  return () => taps.delete(tap);
}

export function setLogLevel(level: LogLevel): void {
  minLevel = level;
}

export class Logger {
  constructor(
    readonly component: string,
    private readonly base: LogFields = {},
    /** Lines below this level are dropped whatever the process's level (zap's IncreaseLevel). */
    private readonly floor: LogLevel = "debug",
  ) {}

  child(fields: LogFields): Logger {
    return new Logger(this.component, { ...this.base, ...fields }, this.floor);
  }

  /** This logger, keeping only lines of `level` and above. */
  atLeast(level: LogLevel): Logger {
    return new Logger(this.component, this.base, level);
  }

  debug(msg: string, fields?: LogFields): void {
    this.write("debug", msg, fields);
  }
  info(msg: string, fields?: LogFields): void {
    this.write("info", msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.write("warn", msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.write("error", msg, fields);
  }

  private write(level: LogLevel, msg: string, fields?: LogFields): void {
    if (levelRank[level] < Math.max(levelRank[minLevel], levelRank[this.floor])) return;
    const record: LogFields = { ts: new Date().toISOString(), level, component: this.component, msg, ...this.base };
    if (fields) {
      for (const [k, v] of Object.entries(fields)) record[k] = v instanceof Error ? errorText(v) : v;
    }
    const { ts: _ts, level: _level, component, msg: _msg, ...rest } = record;
    const extra = Object.keys(rest).length > 0 ? " " + JSON.stringify(rest) : "";
    const human = `[basalt] ${String(component)}: ${msg}${extra}`;
    sink(format === "json" ? JSON.stringify(record) : human);
    if (taps.size > 0) {
      const line = `${goTime(new Date())} ${human}`;
      for (const tap of taps) tap(line, String(component));
    }
  }
}

/** Go's 2006/01/02 15:04:05.000000 (Talos's machined log), in UTC. */
function goTime(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}.${p(d.getUTCMilliseconds(), 3)}000`;
}

function errorText(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${errorText(cause)}` : err.message;
}

export function logger(component: string, fields?: LogFields): Logger {
  return new Logger(component, fields);
}
