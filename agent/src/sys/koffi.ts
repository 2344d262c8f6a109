// The FFI library (koffi) for the kernel calls Node has no API for that run rarely (install's disk
// locks, kexec); what runs on every node (clock, terminals, packet sockets) is in sys/kernel-calls.ts. The
// bundle carries koffi's addon as native/koffi-<arch>.node beside it (its API is the
// addon's own); from dist, the koffi package.

import { locateAddon } from "./addon.js";

export interface Koffi {
  load(lib: string): { func(sig: string): (...args: unknown[]) => number };
  errno(): number;
  /** Declares a C struct by name, for use in later `func` signatures. */
  struct(name: string, fields: Record<string, string>): unknown;
}

/**
 * Where koffi is, found without loading it (the addon costs ~0.2 s of CPU on a fast host, far more
 * under emulation, which boot does not wait for); throws what both places answered.
 */
export function locateKoffi(): () => Koffi {
  return locateAddon<Koffi>(
    [`./native/koffi-${process.arch}.node`, "koffi"],
    "the FFI library (koffi) is not available",
  );
}

export function loadKoffi(): Koffi {
  return locateKoffi()();
}
