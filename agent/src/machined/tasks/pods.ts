// The Kubernetes side of stopping a node (Talos's stopAndRemoveAllPods, StartDBus, StopDBus):
// the kubelet is told over logind and given time to stop its pods gracefully, then the kubelet
// stops and the CRI's pods are stopped (or removed) by whoever runs the CRI.

import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import type { MachineRuntime, PodStopAction } from "../runtime.js";

const log = logger("machined");

/**
 * Starts the system bus and login1 without holding up the boot (loading the fd-passing addon and
 * listening take 0.3-0.45 s on the host; the kubelet connects much later). A node without them
 * still runs: the kubelet's graceful shutdown is what fails (its log says so), so this only logs.
 */
export async function startDBus(r: MachineRuntime): Promise<void> {
  r.logind.start().catch((err: unknown) =>
    log.error("starting the system bus failed: the kubelet's graceful node shutdown is off", {
      error: describeError(err),
    }),
  );
}

export async function stopDBus(r: MachineRuntime): Promise<void> {
  await r.logind
    .stop()
    .catch((err: unknown) => log.warn("stopping the system bus failed, ignored", { error: describeError(err) }));
}

function stopAndRemoveAllPods(action: PodStopAction) {
  return async (r: MachineRuntime, signal: AbortSignal): Promise<void> => {
    log.info("shutting down kubelet gracefully");
    const outcome = await r.logind.waitShutdown(signal);
    if (outcome !== "released") log.warn(`the kubelet's inhibitor lock was not released: ${outcome}`);
    await r.supervisor.stop("kubelet", "the node is stopping");
    await r.stopPods(action, signal);
  };
}

export const stopAllPods = stopAndRemoveAllPods("stop");
export const removeAllPods = stopAndRemoveAllPods("remove");
