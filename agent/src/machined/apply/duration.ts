// Durations as ApplyConfiguration takes and prints them: google.protobuf.Duration in,
// Go's time.Duration.String() out ("1m0s", "30s", "1.5s", "500ms").

/** A google.protobuf.Duration as the gRPC loader gives it (null when absent). */
export interface ProtoDuration {
  seconds?: number | string | null;
  nanos?: number | null;
}

/** Talos's default try_mode_timeout (constants.ConfigTryTimeout). */
export const defaultTryTimeoutMs = 60_000;

/** The try-mode timeout a request asks for: its duration when present (even zero, as Talos), else the default. */
export function tryTimeoutMs(t: ProtoDuration | null | undefined): number {
  if (!t) return defaultTryTimeoutMs;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

/** `value` units of `unit` with up to `digits` fraction digits, trailing zeros dropped (Go's fmtFrac). */
function withFraction(value: bigint, unit: bigint, digits: number): string {
  const whole = value / unit;
  const frac = (value % unit).toString().padStart(digits, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** Go's time.Duration.String() for a duration in milliseconds (nanosecond precision). */
export function goDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return "0s";
  const sign = ns < 0n ? "-" : "";
  if (ns < 0n) ns = -ns;
  if (ns < 1000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${withFraction(ns, 1000n, 3)}µs`;
  if (ns < 1_000_000_000n) return `${sign}${withFraction(ns, 1_000_000n, 6)}ms`;
  const second = 1_000_000_000n;
  const totalSeconds = ns / second;
  const seconds = withFraction((totalSeconds % 60n) * second + (ns % second), second, 9);
  const minutes = (totalSeconds / 60n) % 60n;
  const hours = totalSeconds / 3600n;
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}
