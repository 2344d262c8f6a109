import assert from "node:assert/strict";
import { test } from "node:test";
import { NotFoundError } from "../../../../agent/src/errors.js";
import { stopAllPods, type PodRuntime } from "../../../../agent/src/services/cri/stop-pods.js";
import type { CriContainer, PodSandbox } from "../../../../agent/src/sys/cri/client.js";

const POD = 0;
const NODE = 2;

const RUNNING = 1;
const EXITED = 2;

/** A CRI runtime of pods with network modes and containers, recording every call that changes something. */
function fakeRuntime(
  pods: { id: string; mode: number; ready: boolean; containers: { id: string; state: number }[] }[],
  goneStatus: string[] = [],
) {
  const calls: string[] = [];
  const sandbox = (p: (typeof pods)[number]): PodSandbox => ({
    id: p.id,
    metadata: { name: p.id, uid: "", namespace: "kube-system", attempt: 0 },
    state: p.ready ? 0 : 1,
    created_at: 0,
    labels: {},
    annotations: {},
  });
  const container = (pod: string, c: { id: string; state: number }): CriContainer => ({
    id: c.id,
    pod_sandbox_id: pod,
    image_ref: "",
    state: c.state,
    labels: {},
    annotations: {},
  });
  const runtime: PodRuntime = {
    listPodSandbox: async () => pods.map(sandbox),
    podSandboxStatus: async (id) => {
      if (goneStatus.includes(id)) throw new NotFoundError(`pod ${id} is gone`, {});
      return {
        status: { id, state: 0, linux: { namespaces: { options: { network: pods.find((p) => p.id === id)!.mode } } } },
        info: {},
      };
    },
    listContainers: async (filter: { pod_sandbox_id?: string } = {}) =>
      (pods.find((p) => p.id === filter.pod_sandbox_id)?.containers ?? []).map((c) =>
        container(filter.pod_sandbox_id!, c),
      ),
    stopContainer: async (id, timeout) => {
      calls.push(`stopContainer ${id} ${timeout}`);
      for (const c of pods.flatMap((p) => p.containers)) if (c.id === id) c.state = EXITED;
    },
    removeContainer: async (id) => {
      calls.push(`removeContainer ${id}`);
      if (id === "gone") throw new NotFoundError("container gone", {});
    },
    stopPodSandbox: async (id) => {
      calls.push(`stopPodSandbox ${id}`);
      for (const p of pods) if (p.id === id) p.ready = false;
    },
    removePodSandbox: async (id) => void calls.push(`removePodSandbox ${id}`),
  };
  return { runtime, calls };
}

test("stopping pods: pod-network pods first, then host-network ones; running containers get the 30 s grace; sandboxes stay", async () => {
  const { runtime, calls } = fakeRuntime([
    { id: "apiserver", mode: NODE, ready: true, containers: [{ id: "apiserver-c", state: RUNNING }] },
    {
      id: "coredns",
      mode: POD,
      ready: true,
      containers: [
        { id: "coredns-c", state: RUNNING },
        { id: "coredns-old", state: EXITED },
      ],
    },
    { id: "done", mode: POD, ready: false, containers: [] },
  ]);
  await stopAllPods(runtime, "stop");
  assert.deepEqual(calls, [
    "stopContainer coredns-c 30",
    "stopPodSandbox coredns",
    "stopContainer apiserver-c 30",
    "stopPodSandbox apiserver",
  ]);
});

test("removing pods removes every container and sandbox; a pod or container already gone is no error", async () => {
  const { runtime, calls } = fakeRuntime(
    [
      {
        id: "proxy",
        mode: NODE,
        ready: true,
        containers: [
          { id: "gone", state: EXITED },
          { id: "proxy-c", state: RUNNING },
        ],
      },
      { id: "vanished", mode: POD, ready: true, containers: [{ id: "x", state: RUNNING }] },
    ],
    ["vanished"],
  );
  await stopAllPods(runtime, "remove");
  assert.deepEqual(calls.sort(), [
    "removeContainer gone",
    "removeContainer proxy-c",
    "removePodSandbox proxy",
    "stopContainer proxy-c 30",
    "stopPodSandbox proxy",
  ]);
});
