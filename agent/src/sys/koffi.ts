// The FFI library (koffi) for the few kernel calls Node has no API for (adjtimex,
// packet sockets). The bundle carries koffi's addon as native/koffi-<arch>.node beside
// it (its API is the addon's own); from dist, the koffi package.

import { createRequire } from "node:module";

export interface Koffi {
  load(lib: string): { func(sig: string): (...args: unknown[]) => number };
  errno(): number;
}

/** koffi, or throws what both places answered. */
export function loadKoffi(): Koffi {
  const require = createRequire(import.meta.url);
  try {
    return require(`./native/koffi-${process.arch}.node`) as Koffi;
  } catch (bundled) {
    try {
      // A computed name so esbuild leaves the package out of the bundle.
      const name = "koffi";
      return require(name) as Koffi;
    } catch (err) {
      throw new AggregateError([bundled, err], "the FFI library (koffi) is not available");
    }
  }
}
