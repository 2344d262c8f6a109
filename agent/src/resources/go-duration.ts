// Go's time.Duration.String(), which Talos's YAML (yaml.v3) and messages print durations with.

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
