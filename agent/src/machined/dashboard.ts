// The `dashboard` service, as Talos's: after machined, it shows tty2 with the console summary
// (console-summary.ts) and below it the kernel-log pane (kernel-log-pane.ts), redrawn whenever a
// resource it reads changes or a kernel message arrives, keeps the kernel's messages on tty1, and
// switches back to tty1 when it stops. `talos.dashboard.disabled=1` leaves it out.

import type { ServiceDefinition } from "../services/service.js";
import { InProcessRunner } from "../services/inprocess-runner.js";
import type { ResourceState } from "../resources/state.js";
import type { VirtualTerminals } from "../sys/vt.js";
import { renderConsoleSummary, summaryInputs } from "./console-summary.js";
import { composeScreen, followKernelLog, LogLines } from "./kernel-log-pane.js";

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
  /** The kernel's messages as Dmesg sends them, from the first, followed until the signal aborts (rpc/dmesg.ts). */
  kernelLog: (signal: AbortSignal) => AsyncIterable<string>;
  /**
   * How long a kernel message waits for the redraw that shows it (default 500 ms): at boot they come by the
   * hundred, and every redraw repaints the whole screen.
   */
  logRedrawMs?: number;
  /**
   * Whether udevd runs here: Talos's dashboard phase comes after udevd is up (its first coldplug settled), and
   * a dashboard drawn during the coldplug takes CPU the links and DHCP wait for (~0.6 s of a boot under TCG).
   */
  afterUdevd?: boolean;
}

/** Draws now, then again after each burst of changes to the summary's inputs or the kernel log, until `signal` aborts. */
export function drawSummaryUntil(opts: DashboardOptions, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let pending = false;
    const kernelLines = new LogLines();
    const draw = () => {
      pending = false;
      if (signal.aborted) return;
      try {
        const summary = renderConsoleSummary(opts.state, {
          version: opts.version,
          apiPort: opts.apiPort,
          installFailure: opts.installFailure,
        });
        opts.terminals.draw(
          dashboardTty,
          composeScreen(summary, kernelLines.lines(), opts.terminals.size(dashboardTty)),
        );
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
    let logTimer: NodeJS.Timeout | undefined;
    const scheduleForLog = () => {
      logTimer ??= setTimeout(() => {
        logTimer = undefined;
        schedule();
      }, opts.logRedrawMs ?? 500);
    };
    for (const kind of summaryInputs) opts.state.watch(kind, { signal }, schedule);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(logTimer);
        resolve();
      },
      { once: true },
    );
    if (signal.aborted) resolve();
    followKernelLog(opts.kernelLog, kernelLines, scheduleForLog, signal).catch(reject);
    schedule();
  });
}

export function dashboardService(opts: DashboardOptions): ServiceDefinition {
  return {
    id: "dashboard",
    dependsOn: opts.afterUdevd ? ["machined", "udevd"] : ["machined"],
    restart: "always",
    cgroup: "/system/dashboard",
    pre: async () => opts.terminals.activate(dashboardTty, kernelLogsTty),
    post: async () => opts.terminals.activate(kernelLogsTty, kernelLogsTty),
    runner: new InProcessRunner({ id: "dashboard", run: (signal) => drawSummaryUntil(opts, signal) }),
  };
}
