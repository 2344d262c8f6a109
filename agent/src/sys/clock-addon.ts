// The project's kernel clock addon (agent/native/clock.c, built by scripts/build-native.sh as
// native/clock-<arch>.node): beside the bundle's chunks in the image, beside the entry script
// (dist/agent/src/cmd) in dist.

import { createRequire } from "node:module";

/** The addon's calls; each fills the caller's Buffer and returns the call's result or -errno. */
export interface ClockAddon {
  /** adjtimex(2) on a struct timex: the clock state (0..5) or -errno. */
  adjtimex(timex: Buffer): number;
  /** clock_gettime(2) into a struct timespec: 0 or -errno. */
  clockGettime(clockId: number, timespec: Buffer): number;
  /** The RTC_SET_TIME ioctl on an open RTC with a struct rtc_time: 0 or -errno. */
  rtcSetTime(fd: number, rtcTime: Buffer): number;
}

/** Where the addon is, found without loading it (it loads on first use); throws what both places answered. */
export function locateClockAddon(): () => ClockAddon {
  const require = createRequire(import.meta.url);
  // Computed names, so esbuild leaves them out of the bundle.
  const candidates = [`./native/clock-${process.arch}.node`, `../cmd/native/clock-${process.arch}.node`];
  const misses: unknown[] = [];
  for (const name of candidates) {
    try {
      const resolved = require.resolve(name);
      // The addon's exports are the three functions clock.c defines, which ClockAddon describes.
      return () => require(resolved) as ClockAddon;
    } catch (err) {
      misses.push(err);
    }
  }
  throw new AggregateError(misses, "the clock addon is not available");
}
