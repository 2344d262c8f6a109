// One line per call a server answers, as Talos's gRPC log middleware writes it
// (`<code> [<method>] <duration> <unary|stream> <Success|error> (<metadata>)`), with the same facts as fields.
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../log.js";

// grpc-go's names of the status codes, as Talos prints a status.
const goCodeNames = [
  "OK",
  "Canceled",
  "Unknown",
  "InvalidArgument",
  "DeadlineExceeded",
  "NotFound",
  "AlreadyExists",
  "PermissionDenied",
  "ResourceExhausted",
  "FailedPrecondition",
  "Aborted",
  "OutOfRange",
  "Unimplemented",
  "Internal",
  "Unavailable",
  "DataLoss",
  "Unauthenticated",
];

export function goCodeName(code: number): string {
  return goCodeNames[code] ?? `Code(${code})`;
}

/** `value` / 10^digits with Go's fraction: trailing zeros dropped, no point when none is left. */
function fraction(value: number, digits: number): string {
  const unit = 10 ** digits;
  const whole = Math.floor(value / unit);
  const rest = String(value % unit)
    .padStart(digits, "0")
    .replace(/0+$/, "");
  return rest ? `${whole}.${rest}` : String(whole);
}

/** Go's time.Duration.String for a duration in nanoseconds. */
export function goDuration(ns: number): string {
  const n = Math.round(ns);
  if (n === 0) return "0s";
  if (n < 1e3) return `${n}ns`;
  if (n < 1e6) return `${fraction(n, 3)}µs`;
  if (n < 1e9) return `${fraction(n, 6)}ms`;
  const hours = Math.floor(n / 3.6e12);
  const minutes = Math.floor((n % 3.6e12) / 6e10);
  const seconds = `${fraction(n % 6e10, 9)}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}

// Talos hides these values in its call log.
const sensitive = new Set(["token"]);

/** The caller's metadata as Talos's log shows it: keys sorted, values joined by commas, pairs by semicolons. */
export function metadataText(metadata: Iterable<[string, string[]]>): string {
  return [...metadata]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${sensitive.has(k) ? "<hidden>" : v.join(",")}`)
    .join(";");
}

export interface CallRecord {
  path: string;
  streaming: boolean;
  code: number;
  /** The status message (empty on success). */
  details: string;
  durationNs: number;
  metadata: Iterable<[string, string[]]>;
}

export function logCall(log: Logger, r: CallRecord): void {
  const code = goCodeName(r.code);
  const kind = r.streaming ? "stream" : "unary";
  const duration = goDuration(r.durationNs);
  const outcome = r.code === 0 ? "Success" : `rpc error: code = ${code} desc = ${r.details}`;
  log.info(`${code} [${r.path}] ${duration} ${kind} ${outcome} (${metadataText(r.metadata)})`, {
    method: r.path,
    code,
    duration,
    kind,
  });
}

// grpc-go keeps these out of a call's metadata (content-type and :authority it puts back).
const reserved = new Set([
  "te",
  "grpc-timeout",
  "grpc-encoding",
  "grpc-accept-encoding",
  "grpc-message",
  "grpc-status",
  "grpc-message-type",
  "grpc-status-details-bin",
]);

/** An HTTP/2 request's headers as grpc-go's server turns them into the call's metadata. */
export function headerMetadata(headers: Record<string, string | string[] | undefined>): [string, string[]][] {
  const out: [string, string[]][] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || reserved.has(k) || (k.startsWith(":") && k !== ":authority")) continue;
    out.push([k, Array.isArray(v) ? v : [v]]);
  }
  return out;
}

/** A grpc-js server interceptor logging every call it answers, as `logCall` words it. */
export function callLogInterceptor(log: Logger): grpc.ServerInterceptor {
  return (method, call) => {
    const started = process.hrtime.bigint();
    let metadata: [string, string[]][] = [];
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (md, mdNext) => {
            metadata = Object.entries(md.toJSON()).map(([k, v]) => [k, v.map(String)]);
            mdNext(md);
          },
        }),
      sendStatus: (status, next) => {
        const durationNs = Number(process.hrtime.bigint() - started);
        logCall(log, {
          path: method.path,
          streaming: method.requestStream || method.responseStream,
          code: status.code ?? 0,
          details: status.details ?? "",
          durationNs,
          metadata,
        });
        next(status);
      },
    });
  };
}
