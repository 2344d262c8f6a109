// Shared by the integration tests that build network namespaces.
import { execFileSync } from "node:child_process";

/** Why network namespaces cannot be used here (a skip reason), or undefined when they can. */
export function canRunNetns(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root to create network namespaces";
  try {
    execFileSync("ip", ["netns", "list"], { stdio: "ignore" });
  } catch {
    return "`ip netns` is not available";
  }
  return undefined;
}

/** Runs `ip` with these arguments; its output. */
export function ip(...args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8" });
}

/**
 * `<prefix>.<n>` for the first n from `preferred` up (wrapping) whose /24 no
 * address or route of the root namespace touches. A fixed subnet is not enough:
 * a run killed before its cleanup leaves its bridge behind, and connections to
 * the next run's nodes then go to that dead bridge and are refused.
 */
export function freeSubnet(prefix: string, preferred: number): string {
  const used = new Set<string>();
  let seen: string;
  try {
    seen = `${ip("-4", "-o", "addr", "show")}\n${ip("-4", "route", "show", "table", "all")}`;
  } catch {
    return `${prefix}.${preferred}`; // no iproute2: the test skips anyway
  }
  for (const m of seen.matchAll(/(\d+\.\d+\.\d+)\.\d+/g)) used.add(m[1]!);
  for (let i = 0; i < 250; i++) {
    const n = ((preferred - 1 + i) % 250) + 1;
    if (!used.has(`${prefix}.${n}`)) return `${prefix}.${n}`;
  }
  throw new Error(`no free /24 under ${prefix}`);
}
