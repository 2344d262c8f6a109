// The -k calls over a fake CRI runtime: Talos's ids and statuses, images by their first tag, a
// sandbox counted as using nothing, and FailedPrecondition when the cri service does not run.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConflictError, InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";
import { containersResponse, statsResponse, type CriAccess } from "../../../agent/src/machined/rpc/containers.js";
import { tailLines } from "../../../agent/src/machined/rpc/cri-logs.js";
import { imageProcess, mergeEnv } from "../../../agent/src/services/containerd/image-runner.js";
import { criContainer, parseContainerDisplay } from "../../../agent/src/services/cri/inspector.js";
import type { ContainerdClient } from "../../../agent/src/sys/containerd/client.js";
import type { CriClient } from "../../../agent/src/sys/cri/client.js";

const sandboxId = "a".repeat(64);
const containerId = "0123456789abcdef".repeat(4);

/** The answers containerd's CRI gives for one ready pod with one running container. */
const fake = {
  listPodSandbox: async (filter: { label_selector?: Record<string, string> } = {}) =>
    filter.label_selector?.["io.kubernetes.pod.name"] === "nosuch"
      ? []
      : [
          {
            id: sandboxId,
            metadata: { name: "etcd-n1", namespace: "kube-system", uid: "u", attempt: 0 },
            state: 0,
            created_at: 1,
            labels: {},
            annotations: {},
          },
        ],
  podSandboxStatus: async () => ({
    status: { id: sandboxId, state: 0 },
    info: {
      info: JSON.stringify({
        pid: 101,
        image: "sha256:pause",
        runtimeSpec: { linux: { namespaces: [{ type: "pid" }, { type: "network", path: "/var/run/netns/cni-1234" }] } },
      }),
    },
  }),
  listContainers: async () => [
    {
      id: containerId,
      pod_sandbox_id: sandboxId,
      metadata: { name: "etcd", attempt: 0 },
      image_ref: "sha256:etcd",
      state: 1,
      labels: { "io.kubernetes.pod.name": "etcd-n1", "io.kubernetes.pod.namespace": "kube-system" },
      annotations: {},
    },
  ],
  containerStatus: async () => ({
    status: { id: containerId, state: 1, log_path: "/var/log/pods/x/etcd/0.log", exit_code: 0 },
    info: { info: JSON.stringify({ pid: 202 }) },
  }),
  listContainerStats: async () => [
    {
      attributes: { id: containerId },
      cpu: { usage_core_nano_seconds: { value: 5000 } },
      memory: { working_set_bytes: { value: 4096 } },
    },
  ],
  listImages: async () => [
    { id: "sha256:pause", repo_tags: ["registry.k8s.io/pause:3.8"], repo_digests: [], size: 1 },
    { id: "sha256:etcd", repo_tags: [], repo_digests: ["gcr.io/etcd@sha256:1"], size: 1 },
  ],
};

function access(running: boolean): CriAccess {
  return {
    running: () => running,
    // The fake answers the calls the inspector makes; the rest of CriClient is never reached.
    runtime: () => fake as unknown as CriClient,
    // The CRI driver never asks for the containerd API.
    containerd: () => ({}) as ContainerdClient,
  };
}

test("Containers -k: the sandbox as ns/pod, its container as ns/pod:name:<12 chars>, as Talos shows them", async () => {
  const reply = await containersResponse(undefined, access(true), { namespace: "k8s.io", driver: 1 });
  assert.deepEqual(reply.messages[0]!.containers, [
    {
      namespace: "k8s.io",
      id: "kube-system/etcd-n1",
      pod_id: "kube-system/etcd-n1",
      name: "kube-system/etcd-n1",
      image: "registry.k8s.io/pause:3.8",
      pid: 101,
      status: "SANDBOX_READY",
      network_namespace: "cni-1234",
    },
    {
      namespace: "k8s.io",
      id: "kube-system/etcd-n1:etcd:0123456789ab",
      pod_id: "kube-system/etcd-n1",
      name: "etcd",
      image: "sha256:etcd",
      pid: 202,
      status: "CONTAINER_RUNNING",
      network_namespace: "",
    },
  ]);
});

test("Containers -k: a container removed between the listing and its status is left out, the rest listed", async () => {
  const goneId = "f".repeat(64);
  const withGone = {
    ...fake,
    listContainers: async () => [
      ...(await fake.listContainers()),
      { ...(await fake.listContainers())[0]!, id: goneId, metadata: { name: "etcd", attempt: 1 }, state: 2 },
    ],
    containerStatus: async (id: string) => {
      if (id === goneId) throw new NotFoundError(`containerd CRI ContainerStatus: container "${id}" not found`);
      return fake.containerStatus();
    },
  };
  // As access(): the fake answers the calls the inspector makes.
  const gone: CriAccess = { ...access(true), runtime: () => withGone as unknown as CriClient };
  const reply = await containersResponse(undefined, gone, { namespace: "k8s.io", driver: 1 });
  assert.deepEqual(
    reply.messages[0]!.containers.map((c) => c.id),
    ["kube-system/etcd-n1", "kube-system/etcd-n1:etcd:0123456789ab"],
  );
});

test("Stats -k: the sandbox uses nothing, the container its working set and CPU nanoseconds", async () => {
  const reply = await statsResponse(undefined, access(true), { namespace: "k8s.io", driver: 1 });
  assert.deepEqual(reply.messages[0]!.stats, [
    {
      namespace: "k8s.io",
      id: "kube-system/etcd-n1",
      pod_id: "kube-system/etcd-n1",
      name: "kube-system/etcd-n1",
      memory_usage: 0,
      cpu_usage: 0,
    },
    {
      namespace: "k8s.io",
      id: "kube-system/etcd-n1:etcd:0123456789ab",
      pod_id: "kube-system/etcd-n1",
      name: "etcd",
      memory_usage: 4096,
      cpu_usage: 5000,
    },
  ]);
});

test("-k with the cri service down is FailedPrecondition; another namespace is refused; a node without CRI lists nothing", async () => {
  await assert.rejects(
    containersResponse(undefined, access(false), { namespace: "k8s.io", driver: 1 }),
    (err: unknown) => err instanceof ConflictError && /CRI runtime is not running/.test(err.message),
  );
  await assert.rejects(
    statsResponse(undefined, access(true), { namespace: "system", driver: 1 }),
    (err: unknown) => err instanceof InvalidInputError && /only for K8s namespace/.test(err.message),
  );
  assert.deepEqual(
    (await containersResponse(undefined, undefined, { namespace: "k8s.io", driver: 1 })).messages[0]!.containers,
    [],
  );
});

test("a -k id names a pod, a container or one run of it (Talos's parseContainerDisplay); lookups follow it", async () => {
  assert.deepEqual(parseContainerDisplay("kube-system/etcd-n1"), {
    namespace: "kube-system",
    pod: "etcd-n1",
    name: "",
    containerId: "",
  });
  assert.deepEqual(parseContainerDisplay("kube-system/etcd-n1:etcd:0123"), {
    namespace: "kube-system",
    pod: "etcd-n1",
    name: "etcd",
    containerId: "0123",
  });
  assert.deepEqual(parseContainerDisplay("plain"), { namespace: "", pod: "", name: "plain", containerId: "" });
  // As in access(): the fake answers every call a lookup makes.
  const cri = fake as unknown as CriClient;
  assert.equal((await criContainer(cri, "kube-system/etcd-n1:etcd"))?.logPath, "/var/log/pods/x/etcd/0.log");
  assert.equal((await criContainer(cri, "kube-system/etcd-n1:etcd:0123456789ab"))?.id, containerId);
  assert.equal(await criContainer(cri, "kube-system/etcd-n1:etcd:ffff"), undefined);
  assert.equal((await criContainer(cri, "kube-system/etcd-n1"))?.isPodSandbox, true);
  assert.equal(await criContainer(cri, "kube-system/nosuch"), undefined);
});

test("tail_lines: the last n lines, all when negative, none for 0", () => {
  const text = Buffer.from("a\nb\nc\n");
  assert.equal(tailLines(text, 2).toString(), "b\nc\n");
  assert.equal(tailLines(text, 5).toString(), "a\nb\nc\n");
  assert.equal(tailLines(text, -1).toString(), "a\nb\nc\n");
  assert.equal(tailLines(text, 0).toString(), "");
  assert.equal(tailLines(Buffer.from("a\nb"), 1).toString(), "b");
});

test("an image's container: its config first, the service's settings over it (oci.WithImageConfig, then args and env)", () => {
  assert.deepEqual(mergeEnv(["PATH=/bin", "A=1"], ["A=2", "B=3"]), ["PATH=/bin", "A=2", "B=3"]);
  const config = {
    env: ["PATH=/usr/bin", "A=1"],
    entrypoint: ["/etcd"],
    cmd: ["--help"],
    user: "1000:1001",
    workingDir: "/w",
    topChainId: "sha256:x",
  };
  const base = {
    args: [],
    env: ["A=2"],
    readonlyRootfs: true,
    mounts: [],
    hostFiles: {},
    heldCapabilities: new Set<string>(),
  };
  const ctx = {
    cgroup: "/system/etcd",
    oomScoreAdj: -998,
    openOutput: () => {
      throw new Error("unused");
    },
    placeProcess: () => undefined,
  };
  const p = imageProcess(config, base, ctx);
  assert.deepEqual(
    [p.rootfs, p.args, p.env, p.cwd, p.user, p.cgroupsPath, p.oomScoreAdj],
    ["rootfs", ["/etcd", "--help"], ["PATH=/usr/bin", "A=2"], "/w", { uid: 1000, gid: 1001 }, "/system/etcd", -998],
  );
  const q = imageProcess(
    config,
    { ...base, args: ["/etcd", "--name", "n1"], user: { uid: 60, gid: 60 }, cgroupsPath: "/x", oomScoreAdj: -1 },
    ctx,
  );
  assert.deepEqual(
    [q.args, q.user, q.cgroupsPath, q.oomScoreAdj],
    [["/etcd", "--name", "n1"], { uid: 60, gid: 60 }, "/x", -1],
  );
});
