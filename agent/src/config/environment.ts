// The environment Talos gives machined and its services: every `talos.environment=KEY=VALUE`
// kernel argument, then `.machine.env` (Talos's environment.Get).

import type { ConfigBundle } from "./bundle.js";

/** "KEY=VALUE" entries in Talos's order: the kernel arguments first, then the config's. */
export function userEnvironment(
  cmdline: ReadonlyMap<string, readonly string[]>,
  config: ConfigBundle | undefined,
): string[] {
  const out = [...(cmdline.get("talos.environment") ?? [])];
  for (const [key, value] of Object.entries(config?.v1alpha1()?.machine?.env ?? {})) out.push(`${key}=${value}`);
  return out;
}

/** The variables apid is not given: grpc honours them, and a proxy between apid and machined breaks its calls. */
const proxyVariables = new Set(["no_proxy", "http_proxy", "https_proxy"]);

export function isProxyVariable(key: string): boolean {
  return proxyVariables.has(key.toLowerCase());
}

/** Entries merged in order, a later value of a key replacing an earlier one in its place (as containerd's WithEnv). */
export function mergeEnvironment(...lists: readonly (readonly string[])[]): string[] {
  const merged = new Map<string, string>();
  for (const entry of lists.flat()) merged.set(splitEnvEntry(entry).key, entry);
  return [...merged.values()];
}

/** KEY=VALUE split at the first "=" (the value may hold more); an entry without one is all key, no value. */
export function splitEnvEntry(entry: string): { key: string; value: string | undefined } {
  const eq = entry.indexOf("=");
  return eq === -1 ? { key: entry, value: undefined } : { key: entry.slice(0, eq), value: entry.slice(eq + 1) };
}
