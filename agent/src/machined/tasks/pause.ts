import { logger } from "../../log.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/**
 * Talos's pauseOnFailure: a failed task waits (so the node can be fixed with apply-config,
 * whose reboot takes over this sequence) and then fails the boot, which reboots the node.
 */
export function pauseOnFailure(name: string, task: (r: MachineRuntime) => Promise<void>, pauseMs = 5 * 60_000) {
  return async (r: MachineRuntime, signal: AbortSignal): Promise<void> => {
    try {
      await task(r);
    } catch (err) {
      log.error(
        `${name} failed, rebooting in ${Math.round(pauseMs / 60_000)} minutes. You can use talosctl apply-config or talosctl edit mc to fix the issues, error:\n${(err as Error).message}`,
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pauseMs);
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      throw err;
    }
  };
}
