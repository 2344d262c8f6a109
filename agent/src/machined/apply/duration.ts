// Durations as ApplyConfiguration takes and prints them: google.protobuf.Duration in,
// Go's time.Duration.String() out ("1m0s", "30s", "1.5s", "500ms"; shared with resources' YAML).

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

export { goDuration } from "../../resources/go-duration.js";
