// Finding a native addon without loading it (it loads on first use, off the start path).

import { createRequire } from "node:module";

/**
 * The first of `candidates` that resolves from here (a path beside the bundle's chunks or dist's
 * sys/, or a package), as a loader; throws what every candidate answered. The names are computed by
 * the callers, so esbuild leaves the addons out of the bundle.
 */
export function locateAddon<T>(candidates: readonly string[], missing: string): () => T {
  const require = createRequire(import.meta.url);
  const misses: unknown[] = [];
  for (const name of candidates) {
    try {
      const resolved = require.resolve(name);
      // The caller's T describes what that addon exports; nothing here can check it.
      return () => require(resolved) as T;
    } catch (err) {
      misses.push(err);
    }
  }
  throw new AggregateError(misses, missing);
}
