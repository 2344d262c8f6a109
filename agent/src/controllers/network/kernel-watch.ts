// Kernel-observing controllers have no resource inputs: they re-run when the kernel
// reports a change. One watch per controller instance, tied to the runtime's signal,
// nudges the controller through requeueAfter; a slow periodic refresh covers missed
// notifications (e.g. while the watcher restarts).

import type { ControllerContext } from "../../resources/controller-runtime.js";
import type { NetChange, NetKernel } from "../../sys/net.js";

export const REFRESH_MS = 60_000;

export class KernelTrigger {
  private watching: AbortSignal | undefined;
  private ctx: ControllerContext | undefined;

  constructor(
    private readonly kernel: NetKernel,
    private readonly kinds: readonly NetChange[],
  ) {}

  /** Call at the start of every reconcile. */
  arm(ctx: ControllerContext): void {
    this.ctx = ctx;
    if (this.watching !== ctx.signal) {
      this.watching = ctx.signal;
      this.kernel.watch(ctx.signal, (changes) => {
        if (this.kinds.some((k) => changes.has(k))) this.ctx?.requeueAfter(0);
      });
    }
    ctx.requeueAfter(REFRESH_MS);
  }
}
