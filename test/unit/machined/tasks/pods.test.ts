import assert from "node:assert/strict";
import { test } from "node:test";
import type { ShutdownWait } from "../../../../agent/src/machined/logind/service.js";
import type { MachineRuntime, PodStopAction } from "../../../../agent/src/machined/runtime.js";
import { removeAllPods, startDBus, stopAllPods, stopDBus } from "../../../../agent/src/machined/tasks/pods.js";
import type { ServiceDefinition } from "../../../../agent/src/services/service.js";
import { Supervisor } from "../../../../agent/src/services/supervisor.js";

function fakeRuntime(
  steps: string[],
  wait: ShutdownWait,
  start: () => Promise<void> = async () => void steps.push("bus started"),
) {
  const supervisor = new Supervisor({ healthIntervalMs: 60_000 });
  const kubelet: ServiceDefinition = {
    id: "kubelet",
    runner: { start: async () => undefined, stop: async () => void steps.push("kubelet stopped") },
    restart: "never",
  };
  const r = {
    supervisor,
    logind: {
      start,
      stop: async () => void steps.push("bus stopped"),
      waitShutdown: async () => (steps.push("PrepareForShutdown sent, locks waited for"), wait),
    },
    stopPods: async (action: PodStopAction) => void steps.push(`pods: ${action}`),
  };
  // The tasks read only the supervisor, logind and stopPods.
  return { r: r as unknown as MachineRuntime, kubelet };
}

test("stopAllPods: the kubelet is told and waited for, then stopped, then the CRI's pods are stopped", async () => {
  const steps: string[] = [];
  const { r, kubelet } = fakeRuntime(steps, "released");
  await r.supervisor.start(kubelet);
  await stopAllPods(r, new AbortController().signal);
  assert.deepEqual(steps, ["PrepareForShutdown sent, locks waited for", "kubelet stopped", "pods: stop"]);
  assert.equal(r.supervisor.get("kubelet")?.state, "Finished");
});

test("removeAllPods goes on past a lock cut off at its timeout, and without a kubelet service", async () => {
  const steps: string[] = [];
  const { r } = fakeRuntime(steps, "timeout");
  await removeAllPods(r, new AbortController().signal);
  assert.deepEqual(steps, ["PrepareForShutdown sent, locks waited for", "pods: remove"]);
});

test("startDBus does not wait for the bus, and its failure leaves the boot going; stopDBus stops the bus", async () => {
  const steps: string[] = [];
  let fail!: (err: Error) => void;
  const { r } = fakeRuntime(steps, "released", () => new Promise((_, reject) => (fail = reject)));
  await startDBus(r);
  fail(new Error("no usocket"));
  await stopDBus(r);
  assert.deepEqual(steps, ["bus stopped"]);
});
