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
