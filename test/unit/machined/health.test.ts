// talosctl health's server side: each check against fake nodes and a fake Kubernetes
// API, and the progress lines one control plane streams (Talos v1.7.6 pkg/cluster/check).

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  defaultClusterChecks,
  runChecks,
  type CheckContext,
  type KubeReader,
  type NodeReader,
  type ServiceReport,
} from "../../../agent/src/machined/health/checks.js";
import * as grpc from "@grpc/grpc-js";
import { EventEmitter } from "node:events";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { serviceDefinition } from "../../../agent/src/api/index.js";
import { addService } from "../../../agent/src/grpc/server.js";
import {
  clusterInfo,
  clusterServiceImpl,
  streamHealthCheck,
  type HealthCheckRequest,
  type HealthDeps,
} from "../../../agent/src/machined/rpc/health.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import type { KubernetesObject } from "../../../agent/src/resources/catalog/k8s-manifests.js";

const CP = "10.5.0.2";
const GiB = 1024 ** 3;

interface Fake {
  services: Record<string, ServiceReport | undefined>;
  stage: string;
  memKiB: number;
  ephemeralBytes: number;
  staticPods: string[];
  kube: Record<string, KubernetesObject[]>;
}

function healthy(): Fake {
  const running = (hostname: string): ServiceReport => ({
    hostname,
    events: [
      { state: "Preparing", msg: "" },
      { state: "Running", msg: "Health check successful" },
    ],
    healthy: true,
  });
  const readyPod = (name: string, app: string): KubernetesObject => ({
    metadata: { name, labels: { "k8s-app": app } },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{ state: { running: {} } }],
    },
  });
  return {
    services: { etcd: running(CP), kubelet: running(CP) },
    stage: "running",
    memKiB: 4 * 1024 * 1024,
    ephemeralBytes: 10 * GiB,
    staticPods: [
      "kube-system/kube-apiserver-cp1",
      "kube-system/kube-controller-manager-cp1",
      "kube-system/kube-scheduler-cp1",
    ],
    kube: {
      "/api/v1/nodes": [
        {
          metadata: { name: "cp1", labels: { "node-role.kubernetes.io/control-plane": "" } },
          spec: {},
          status: {
            addresses: [
              { type: "InternalIP", address: CP },
              { type: "Hostname", address: "cp1" },
            ],
            conditions: [{ type: "Ready", status: "True" }],
          },
        },
      ],
      "/apis/apps/v1/namespaces/kube-system/daemonsets k8s-app in (kube-apiserver,kube-scheduler,kube-controller-manager)":
        [],
      "/api/v1/namespaces/kube-system/pods k8s-app = kube-apiserver": [
        readyPod("kube-apiserver-cp1", "kube-apiserver"),
      ],
      "/api/v1/namespaces/kube-system/pods k8s-app = kube-scheduler": [
        readyPod("kube-scheduler-cp1", "kube-scheduler"),
      ],
      "/api/v1/namespaces/kube-system/pods k8s-app = kube-controller-manager": [
        readyPod("kube-controller-manager-cp1", "kube-controller-manager"),
      ],
      "/apis/apps/v1/namespaces/kube-system/daemonsets k8s-app=kube-proxy": [{ metadata: { name: "kube-proxy" } }],
      "/api/v1/namespaces/kube-system/pods k8s-app=kube-proxy": [readyPod("kube-proxy-abcde", "kube-proxy")],
      "/apis/apps/v1/namespaces/kube-system/replicasets k8s-app=kube-dns": [],
    },
  };
}

function context(f: Fake, nodes = { controlplane: [CP], worker: [] as string[] }): CheckContext {
  const reader: NodeReader = {
    service: async (_n, id) => f.services[id],
    etcdMembers: async (n) => ({
      hostname: n,
      members: [{ hostname: "cp1", id: "1", isLearner: false, peerUrls: [`https://${CP}:2380`] }],
    }),
    platformMode: async () => "metal",
    memoryTotalKiB: async () => f.memKiB,
    ephemeral: async () => ({ source: "/dev/vda6", sizeBytes: f.ephemeralBytes }),
    machineStage: async () => f.stage,
    staticPodIds: async () => f.staticPods,
  };
  const kube: KubeReader = { list: async (path, selector) => f.kube[selector ? `${path} ${selector}` : path] ?? [] };
  const toNodes = (ips: string[]) => ips.map((ip) => ({ internalIP: ip, ips: [ip] }));
  return {
    cluster: {
      nodes: () => toNodes([...nodes.controlplane, ...nodes.worker]),
      nodesByType: (t) => toNodes(t === "controlplane" ? nodes.controlplane : t === "worker" ? nodes.worker : []),
    },
    nodes: reader,
    kube: async () => kube,
  };
}

async function lastLine(f: Fake, description: string): Promise<string> {
  const check = defaultClusterChecks().find((c) => c.description === description)!;
  const lines: string[] = [];
  await runChecks(context(f), [check], (l) => lines.push(l), new AbortController().signal, 0.0001).catch(
    () => undefined,
  );
  return lines.at(-1)!;
}

test("one healthy control plane: every check of Talos's list in order, each '...' then OK (SKIP for CoreDNS without a ReplicaSet)", async () => {
  const lines: string[] = [];
  await runChecks(context(healthy()), defaultClusterChecks(), (l) => lines.push(l), new AbortController().signal);
  const checks = [
    "etcd to be healthy",
    "etcd members to be consistent across nodes",
    "etcd members to be control plane nodes",
    "apid to be ready",
    "all nodes memory sizes",
    "all nodes disk sizes",
    "kubelet to be healthy",
    "all nodes to finish boot sequence",
    "all k8s nodes to report",
    "all k8s nodes to report ready",
    "all control plane static pods to be running",
    "all control plane components to be ready",
    "kube-proxy to report ready",
    "coredns to report ready",
    "all k8s nodes to report schedulable",
  ];
  assert.deepEqual(
    lines,
    checks.flatMap((c) => [
      `waiting for ${c}: ...`,
      `waiting for ${c}: ${c === "coredns to report ready" ? "SKIP" : "OK"}`,
    ]),
  );
});

test("service checks: Talos's texts for a wrong state, an unhealthy service and a missing one", async () => {
  const f = healthy();
  f.services.etcd = { hostname: CP, events: [{ state: "Preparing", msg: "Running pre state" }], healthy: false };
  assert.equal(
    await lastLine(f, "etcd to be healthy"),
    `waiting for etcd to be healthy: 1 error occurred:\n\t* ${CP}: service "etcd" not in expected state "Running": current state [Preparing] Running pre state`,
  );
  f.services.kubelet = { hostname: CP, events: [{ state: "Running", msg: "" }], healthy: false };
  assert.equal(
    await lastLine(f, "kubelet to be healthy"),
    `waiting for kubelet to be healthy: 1 error occurred:\n\t* ${CP}: service is not healthy: kubelet`,
  );
  f.services.kubelet = undefined;
  assert.equal(
    await lastLine(f, "kubelet to be healthy"),
    "waiting for kubelet to be healthy: expected a response with 1 node(s), got 0",
  );
});

test("node checks: memory, disk, boot stage and static pods", async () => {
  const f = healthy();
  f.memKiB = 1024 * 1024;
  assert.equal(
    await lastLine(f, "all nodes memory sizes"),
    `waiting for all nodes memory sizes: 1 error occurred:\n\t* node "${CP}" does not meet memory requirements: expected at least 1898 MiB, actual 1024 MiB`,
  );
  f.ephemeralBytes = 1 * GiB;
  assert.equal(
    await lastLine(f, "all nodes disk sizes"),
    `waiting for all nodes disk sizes: 1 error occurred:\n\t* ephemeral partition "/dev/vda6" for node "${CP}" is too small, expected at least 6.0 GiB, actual 2.4 GiB`,
  );
  f.stage = "booting";
  assert.equal(
    await lastLine(f, "all nodes to finish boot sequence"),
    `waiting for all nodes to finish boot sequence: nodes are not running: booting: [${CP}]`,
  );
  f.staticPods = ["kube-system/kube-apiserver-cp1"];
  assert.equal(
    await lastLine(f, "all control plane static pods to be running"),
    `waiting for all control plane static pods to be running: missing static pods on node ${CP}: [kube-system/kube-controller-manager kube-system/kube-scheduler]`,
  );
});

test("Kubernetes checks: nodes reported, ready, schedulable, components and kube-proxy pods", async () => {
  const f = healthy();
  const cp1 = f.kube["/api/v1/nodes"]![0]!;
  f.kube["/api/v1/nodes"] = [];
  assert.equal(
    await lastLine(f, "all k8s nodes to report"),
    `waiting for all k8s nodes to report: can't find expected node with IPs ["${CP}"]`,
  );
  f.kube["/api/v1/nodes"] = [
    {
      ...cp1,
      spec: { unschedulable: true },
      status: { addresses: [{ type: "InternalIP", address: CP }], conditions: [{ type: "Ready", status: "False" }] },
    },
  ];
  assert.equal(
    await lastLine(f, "all k8s nodes to report ready"),
    "waiting for all k8s nodes to report ready: some nodes are not ready: [cp1]",
  );
  assert.equal(
    await lastLine(f, "all k8s nodes to report schedulable"),
    "waiting for all k8s nodes to report schedulable: some nodes are not schedulable: [cp1]",
  );
  f.kube["/api/v1/namespaces/kube-system/pods k8s-app = kube-scheduler"] = [];
  assert.equal(
    await lastLine(f, "all control plane components to be ready"),
    "waiting for all control plane components to be ready: expected number of pods for kube-scheduler to be 1, got 0",
  );
  f.kube["/api/v1/namespaces/kube-system/pods k8s-app=kube-proxy"] = [
    {
      metadata: { name: "kube-proxy-x" },
      status: { conditions: [{ type: "Ready", status: "False" }], containerStatuses: [{ state: { waiting: {} } }] },
    },
  ];
  assert.equal(
    await lastLine(f, "kube-proxy to report ready"),
    `waiting for kube-proxy to report ready: no ready pods found for namespace "kube-system" and label selector "k8s-app=kube-proxy"`,
  );
});

test("a check still failing at its timeout ends the run with Go's deadline text after its last state", async () => {
  const f = healthy();
  f.stage = "booting";
  const check = defaultClusterChecks().find((c) => c.description === "all nodes to finish boot sequence")!;
  const lines: string[] = [];
  await assert.rejects(
    runChecks(context(f), [check], (l) => lines.push(l), new AbortController().signal, 0.001),
    /context deadline exceeded/,
  );
  assert.deepEqual(lines, [
    "waiting for all nodes to finish boot sequence: ...",
    `waiting for all nodes to finish boot sequence: nodes are not running: booting: [${CP}]`,
  ]);
});

test("cluster_info in the request names the nodes; without it the Kubernetes nodes do, by role label", async () => {
  const state = new ResourceState();
  const kube: KubeReader = { list: async () => healthy().kube["/api/v1/nodes"]! };
  const given = await clusterInfo(
    { cluster_info: { control_plane_nodes: ["10.5.0.2"], worker_nodes: ["10.5.0.3"] } },
    state,
    async () => kube,
  );
  assert.deepEqual(
    given.nodes().map((n) => n.internalIP),
    ["10.5.0.2", "10.5.0.3"],
  );
  assert.deepEqual(
    given.nodesByType("worker").map((n) => n.internalIP),
    ["10.5.0.3"],
  );
  const found = await clusterInfo({}, state, async () => kube);
  assert.deepEqual(found.nodesByType("controlplane"), [{ internalIP: CP, ips: [CP] }]);
  await assert.rejects(
    clusterInfo({ cluster_info: { control_plane_nodes: ["cp1"] } }, state, async () => kube),
    /unable to parse IP/,
  );
});

class FakeCall extends EventEmitter {
  readonly written: string[] = [];
  ended = false;
  constructor(readonly request: HealthCheckRequest) {
    super();
  }
  write(m: { message: string }): boolean {
    this.written.push(m.message);
    return true;
  }
  end(): void {
    this.ended = true;
  }
}

function deps(f: Fake, checks = defaultClusterChecks()): HealthDeps {
  const ctx = context(f);
  return { state: new ResourceState(), nodes: ctx.nodes, kube: async () => ctx.kube(), checks };
}

// A stand-in for grpc-js's ServerWritableStream: the handler only writes, ends and listens for cancellation.
const asCall = (c: FakeCall) => c as unknown as Parameters<typeof streamHealthCheck>[1];

test("the stream: the discovered nodes as Go prints them, then the progress lines, then the end", async () => {
  const call = new FakeCall({
    wait_timeout: { seconds: 1200 },
    cluster_info: { control_plane_nodes: [CP, "10.5.0.3"] },
  });
  const one = defaultClusterChecks().filter((c) => c.description === "apid to be ready");
  await streamHealthCheck(deps(healthy(), one), asCall(call));
  assert.deepEqual(call.written, [
    `discovered nodes: ["${CP}" "10.5.0.3"]`,
    "waiting for apid to be ready: ...",
    "waiting for apid to be ready: OK",
  ]);
  assert.equal(call.ended, true);
});

test("wait_timeout bounds the whole run: a check still failing ends the stream with context deadline exceeded", async () => {
  const f = healthy();
  f.stage = "booting";
  const call = new FakeCall({ wait_timeout: { nanos: 200_000_000 }, cluster_info: { control_plane_nodes: [CP] } });
  const started = Date.now();
  await assert.rejects(
    streamHealthCheck(
      deps(
        f,
        defaultClusterChecks().filter((c) => c.description === "all nodes to finish boot sequence"),
      ),
      asCall(call),
    ),
    /context deadline exceeded/,
  );
  assert.ok(Date.now() - started < 5000, "stopped at the request's timeout, not the check's 5 minutes");
  assert.equal(call.ended, false);
  assert.equal(
    call.written.at(-1),
    `waiting for all nodes to finish boot sequence: nodes are not running: booting: [${CP}]`,
  );
});

test("over gRPC: HealthCheckProgress messages in order, and a timed-out run ends with DeadlineExceeded 'context deadline exceeded'", async (t) => {
  const sock = path.join(mkdtempSync(path.join(os.tmpdir(), "health-")), "s.sock");
  const server = new grpc.Server();
  const f = healthy();
  const checks = defaultClusterChecks().filter(
    (c) => c.description === "apid to be ready" || c.description === "all nodes to finish boot sequence",
  );
  addService(server, "cluster.ClusterService", clusterServiceImpl(deps(f, checks)), () => {});
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  const Client = grpc.makeGenericClientConstructor(serviceDefinition("cluster.ClusterService"), "ClusterService");
  const client = new Client(`unix://${sock}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    HealthCheck(req: object): grpc.ClientReadableStream<{ message: string }>;
  };
  t.after(() => (client.close(), server.forceShutdown()));
  const run = (req: HealthCheckRequest) =>
    new Promise<{ messages: string[]; error?: grpc.ServiceError }>((resolve) => {
      const messages: string[] = [];
      const stream = client.HealthCheck(req);
      stream.on("data", (m) => messages.push(m.message));
      stream.on("error", (error: grpc.ServiceError) => resolve({ messages, error }));
      stream.on("end", () => resolve({ messages }));
    });
  const ok = await run({ wait_timeout: { seconds: 60 }, cluster_info: { control_plane_nodes: [CP] } });
  assert.equal(ok.error, undefined);
  assert.deepEqual(ok.messages, [
    `discovered nodes: ["${CP}"]`,
    ...["apid to be ready", "all nodes to finish boot sequence"].flatMap((c) => [
      `waiting for ${c}: ...`,
      `waiting for ${c}: OK`,
    ]),
  ]);
  f.stage = "booting";
  const late = await run({ wait_timeout: { nanos: 300_000_000 }, cluster_info: { control_plane_nodes: [CP] } });
  assert.equal(late.error?.code, grpc.status.DEADLINE_EXCEEDED);
  assert.equal(late.error?.details, "context deadline exceeded");
  assert.equal(
    late.messages.at(-1),
    `waiting for all nodes to finish boot sequence: nodes are not running: booting: [${CP}]`,
  );
});
