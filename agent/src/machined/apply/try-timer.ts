// The try-mode rollback (Talos's RollbackToConfigAfter / CancelConfigRollbackTimeout):
// a TRY apply arms a timer holding the config that was active before it; any later
// apply in another mode confirms the tried config by cancelling it; when it fires,
// the held config is made active again.

import type { ConfigBundle } from "../../config/bundle.js";

/** setTimeout's longest delay; longer timeouts are waited for in steps. */
const maxDelayMs = 2 ** 31 - 1;

export class TryModeTimer {
  private timer: NodeJS.Timeout | undefined;
  private readonly revert: (previous: ConfigBundle) => void;

  /** `revert` is called with the config to restore when a try times out; `signal` cancels any pending try. */
  constructor(revert: (previous: ConfigBundle) => void, signal?: AbortSignal) {
    this.revert = revert;
    signal?.addEventListener("abort", () => this.cancel(), { once: true });
  }

  /** Arms the rollback to `previous` after `timeoutMs`, replacing any pending one (its target is dropped, as in Talos). */
  start(previous: ConfigBundle, timeoutMs: number): void {
    this.cancel();
    const due = Date.now() + Math.max(0, timeoutMs);
    const wait = () => {
      const left = due - Date.now();
      this.timer = setTimeout(
        () => {
          if (left > maxDelayMs) return wait();
          this.timer = undefined;
          this.revert(previous);
        },
        Math.min(left, maxDelayMs),
      );
      // A pending rollback alone must not keep the process alive.
      this.timer.unref();
    };
    wait();
  }

  /** Confirms the tried config (no rollback); true when a try was pending. */
  cancel(): boolean {
    const pending = this.timer !== undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    return pending;
  }

  get pending(): boolean {
    return this.timer !== undefined;
  }
}
