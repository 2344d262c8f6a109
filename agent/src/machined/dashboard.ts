// The `dashboard` service, as Talos's: after machined, it shows tty2 with the console summary
// (console-summary.ts) redrawn whenever a resource it reads changes, keeps the kernel's messages
// on tty1, and switches back to tty1 when it stops. `talos.dashboard.disabled=1` leaves it out.

import type { ServiceDefinition } from "../services/service.js";
import { InProcessRunner } from "../services/inprocess-runner.js";
import type { ResourceState } from "../resources/state.js";
import type { VirtualTerminals } from "../sys/vt.js";
import { renderConsoleSummary, summaryInputs } from "./console-summary.js";

/** Talos's constants.DashboardTTY and KernelLogsTTY. */
export const dashboardTty = 2;
export const kernelLogsTty = 1;

/** Whether `talos.dashboard.disabled` (its last value) is true as Go's strconv.ParseBool reads it; unparsable: false. */
export function dashboardDisabled(cmdline: ReadonlyMap<string, string[]>): boolean {
  const value = cmdline.get("talos.dashboard.disabled")?.at(-1);
  return value !== undefined && ["1", "t", "T", "TRUE", "true", "True"].includes(value);
}

export interface DashboardOptions {
  state: ResourceState;
  terminals: VirtualTerminals;
  version: string;
  apiPort: number;
  /** Why the last install failed, shown while in maintenance (install-failure.ts). */
  installFailure?: string | undefined;
}

/** Draws now, then again after each burst of changes to the summary's inputs, until `signal` aborts. */
export function drawSummaryUntil(opts: DashboardOptions, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let pending = false;
    const draw = () => {
      pending = false;
      if (signal.aborted) return;
      try {
        opts.terminals.draw(dashboardTty, renderConsoleSummary(opts.state, { version: opts.version, apiPort: opts.apiPort, installFailure: opts.installFailure }));
      } catch (err) {
        reject(err);
      }
    };
    // One redraw for the events delivered in the same turn (a kind watch's initial listing, a reconcile's writes).
    const schedule = () => {
      if (pending) return;
      pending = true;
      setImmediate(draw);
    };
    for (const kind of summaryInputs) opts.state.watch(kind, { signal }, schedule);
    signal.addEventListener("abort", () => resolve(), { once: true });
    if (signal.aborted) resolve();
    schedule();
  });
}

export function dashboardService(opts: DashboardOptions): ServiceDefinition {
  return {
    id: "dashboard",
    dependsOn: ["machined"],
    restart: "always",
    cgroup: "/system/dashboard",
    pre: async () => opts.terminals.activate(dashboardTty, kernelLogsTty),
    post: async () => opts.terminals.activate(kernelLogsTty, kernelLogsTty),
    runner: new InProcessRunner({ id: "dashboard", run: (signal) => drawSummaryUntil(opts, signal) }),
  };
}
