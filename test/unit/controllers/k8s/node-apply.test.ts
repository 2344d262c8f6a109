import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { test } from "node:test";
import { loadConfig } from "../../../../agent/src/config/load.js";
import type { V1Alpha1Config } from "../../../../agent/src/config/types/v1alpha1.js";
import { temporaryAdminCredentials } from "../../../../agent/src/controllers/k8s/admin-credentials.js";
import { KubeApiError } from "../../../../agent/src/controllers/k8s/kube-client.js";
import { generateSelfSignedCA } from "../../../../agent/src/pki/index.js";
import type { KubernetesRootSpec } from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import { NodeNotRegisteredError, syncNode, type NodeApi } from "../../../../agent/src/controllers/k8s/node-apply.js";
import { NodeLabelSpecController, nodeLabels } from "../../../../agent/src/controllers/k8s/node-label-spec.js";
import {
  OwnedAnnotationError,
  patchNode,
  type KubeNode,
  type Taint,
} from "../../../../agent/src/controllers/k8s/node-patch.js";
import { nodeStatusSpec } from "../../../../agent/src/controllers/k8s/node-status.js";
import { NodeCordonedSpecController } from "../../../../agent/src/controllers/k8s/node-cordoned-spec.js";
import { NodeTaintSpecController, nodeTaints } from "../../../../agent/src/controllers/k8s/node-taint-spec.js";
import { logger } from "../../../../agent/src/log.js";
import { K8S_NAMESPACE } from "../../../../agent/src/resources/catalog/k8s-kubelet.js";
import {
  NodeCordonedSpecType,
  NodeLabelSpecType,
  NodeTaintSpecType,
  type NodeLabelSpecSpec,
  type NodeTaintSpecSpec,
} from "../../../../agent/src/resources/catalog/k8s-nodes.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStage,
  type MachineStatusSpec,
} from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { until } from "../secrets/wait.js";
import { genConfigs, node, withPatch } from "./harness.js";

const doc = (yaml: string): V1Alpha1Config => loadConfig(yaml).v1alpha1()!;
const facts = { hostname: "cp-1", domainname: "", routed: ["10.5.0.2/24"] };
const ROLE = "node-role.kubernetes.io/control-plane";

const specsOf = <S>(state: ResourceState, type: string): Record<string, S> =>
  Object.fromEntries(state.list<S>(K8S_NAMESPACE, type).map((r) => [r.metadata.id, r.spec]));

/** Waits until the specs of `type` are exactly `expected` (by id). */
const specsBecome = <S>(state: ResourceState, type: string, expected: Record<string, S>) =>
  until(`${type} = ${JSON.stringify(expected)}`, () => {
    const got = specsOf<S>(state, type);
    return JSON.stringify(got) === JSON.stringify(expected) ? got : undefined;
  });

test("node labels: the control plane's role label (empty value) plus .machine.nodeLabels; none without .machine", async () => {
  const { controlplane: controlPlane, worker } = await genConfigs();
  assert.deepEqual([...nodeLabels(doc(controlPlane))], [[ROLE, ""]]);
  assert.deepEqual([...nodeLabels(doc(worker))], []);
  assert.deepEqual(
    Object.fromEntries(nodeLabels(doc(withPatch(worker, "machine:\n  nodeLabels:\n    zone: a\n    rack: r1\n")))),
    { zone: "a", rack: "r1" },
  );
  assert.deepEqual([...nodeLabels({ cluster: {} })], []);
});

test("node taints: control-plane NoSchedule unless allowSchedulingOnControlPlanes; value:Effect or a bare Effect", async () => {
  const { controlplane: controlPlane, worker } = await genConfigs();
  assert.deepEqual([...nodeTaints(doc(controlPlane)).values()], [{ key: ROLE, effect: "NoSchedule", value: "" }]);
  assert.deepEqual(
    [...nodeTaints(doc(withPatch(controlPlane, "cluster:\n  allowSchedulingOnControlPlanes: true\n")))],
    [],
  );
  // The deprecated key counts only when the current one is absent, as Talos's ScheduleOnControlPlanes.
  assert.equal(nodeTaints({ machine: { type: "controlplane" }, cluster: { allowSchedulingOnMasters: true } }).size, 0);
  assert.equal(
    nodeTaints({
      machine: { type: "controlplane" },
      cluster: { allowSchedulingOnMasters: true, allowSchedulingOnControlPlanes: false },
    }).size,
    1,
  );
  // No control plane taint without a .cluster section.
  assert.equal(nodeTaints({ machine: { type: "controlplane" } }).size, 0);
  assert.deepEqual(
    Object.fromEntries(
      nodeTaints(
        doc(withPatch(worker, "machine:\n  nodeTaints:\n    gpu: 'true:NoExecute'\n    dedicated: NoSchedule\n")),
      ),
    ),
    {
      gpu: { key: "gpu", effect: "NoExecute", value: "true" },
      dedicated: { key: "dedicated", effect: "NoSchedule", value: "" },
    },
  );
});

test("NodeLabelSpec and NodeTaintSpec controllers follow the config, destroying what is no longer wanted", async (t) => {
  const { controlplane: controlPlane } = await genConfigs();
  const { state, setConfig } = node(t, controlPlane, facts, [
    new NodeLabelSpecController(),
    new NodeTaintSpecController(),
  ]);
  await specsBecome<NodeLabelSpecSpec>(state, NodeLabelSpecType, { [ROLE]: { key: ROLE, value: "" } });
  await specsBecome<NodeTaintSpecSpec>(state, NodeTaintSpecType, {
    [ROLE]: { key: ROLE, effect: "NoSchedule", value: "" },
  });
  assert.equal(state.get(K8S_NAMESPACE, NodeLabelSpecType, ROLE)?.metadata.owner, "k8s.NodeLabelSpecController");

  setConfig(
    withPatch(
      controlPlane,
      "machine:\n  nodeLabels:\n    zone: a\n  nodeTaints:\n    gpu: 'true:NoExecute'\ncluster:\n  allowSchedulingOnControlPlanes: true\n",
    ),
  );
  await specsBecome<NodeLabelSpecSpec>(state, NodeLabelSpecType, {
    [ROLE]: { key: ROLE, value: "" },
    zone: { key: "zone", value: "a" },
  });
  await specsBecome<NodeTaintSpecSpec>(state, NodeTaintSpecType, {
    gpu: { key: "gpu", effect: "NoExecute", value: "true" },
  });
});

const nodeWith = (labels: Record<string, string>, taints: Taint[], owned: { labels?: string[]; taints?: string[] }) => {
  const annotations: Record<string, string> = { "node.alpha.kubernetes.io/ttl": "0" };
  if (owned.labels) annotations["talos.dev/owned-labels"] = JSON.stringify(owned.labels);
  if (owned.taints) annotations["talos.dev/owned-taints"] = JSON.stringify(owned.taints);
  return { metadata: { name: "n1", resourceVersion: "7", labels, annotations }, spec: { taints } } as KubeNode;
};

test("labels: Talos's cases (initial set, owned updated and removed, others' left alone)", () => {
  const initial = patchNode(
    nodeWith({ hostname: "foo" }, [], {}),
    new Map([
      ["label1", "value1"],
      ["label2", "value2"],
    ]),
    [],
  );
  assert.ok(initial.changed);
  assert.deepEqual(initial.node.metadata.labels, { hostname: "foo", label1: "value1", label2: "value2" });
  assert.deepEqual(initial.node.metadata.annotations, {
    "node.alpha.kubernetes.io/ttl": "0",
    "talos.dev/owned-labels": '["label1","label2"]',
  });
  assert.equal(initial.node.metadata.resourceVersion, "7");

  const owned = patchNode(
    nodeWith({ hostname: "foo", label1: "value1", label2: "value2" }, [], { labels: ["label1", "label2"] }),
    new Map([["label1", "value3"]]),
    [],
  );
  assert.deepEqual(owned.node.metadata.labels, { hostname: "foo", label1: "value3" });
  assert.equal(owned.node.metadata.annotations?.["talos.dev/owned-labels"], '["label1"]');

  const others = patchNode(
    nodeWith({ hostname: "foo", label1: "value1", label2: "value2", label3: "value3" }, [], {}),
    new Map([
      ["label1", "value3"],
      ["label2", "value2"],
    ]),
    [],
  );
  assert.deepEqual(others.node.metadata.labels, {
    hostname: "foo",
    label1: "value1",
    label2: "value2",
    label3: "value3",
  });
  assert.equal(others.node.metadata.annotations?.["talos.dev/owned-labels"], '["label2"]');

  const allGone = patchNode(nodeWith({ hostname: "foo", a: "1" }, [], { labels: ["a"] }), new Map(), []);
  assert.deepEqual(allGone.node.metadata.labels, { hostname: "foo" });
  assert.deepEqual(allGone.node.metadata.annotations, { "node.alpha.kubernetes.io/ttl": "0" });
});

test("taints: Talos's cases (initial set, owned updated and removed, others' left alone)", () => {
  const foo: Taint = { key: "foo", value: "bar", effect: "NoExecute" };
  const initial = patchNode(nodeWith({}, [foo], {}), new Map(), [
    { key: "taint1", value: "value1", effect: "NoSchedule" },
    { key: "taint2", value: "", effect: "PreferNoSchedule" },
  ]);
  assert.deepEqual(initial.node.spec?.taints, [
    foo,
    { key: "taint1", value: "value1", effect: "NoSchedule" },
    { key: "taint2", effect: "PreferNoSchedule" },
  ]);
  assert.equal(initial.node.metadata.annotations?.["talos.dev/owned-taints"], '["taint1","taint2"]');

  const both = [
    foo,
    { key: "taint1", value: "value1", effect: "NoSchedule" },
    { key: "taint2", value: "value2", effect: "NoSchedule" },
  ];
  const owned = patchNode(nodeWith({}, structuredClone(both), { taints: ["taint1", "taint2"] }), new Map(), [
    { key: "taint1", value: "value3", effect: "NoExecute" },
  ]);
  assert.deepEqual(owned.node.spec?.taints, [foo, { key: "taint1", value: "value3", effect: "NoExecute" }]);
  assert.equal(owned.node.metadata.annotations?.["talos.dev/owned-taints"], '["taint1"]');

  const others = patchNode(nodeWith({}, structuredClone(both), {}), new Map(), [
    { key: "taint1", value: "value1", effect: "NoSchedule" },
    { key: "taint2", value: "value3", effect: "NoSchedule" },
  ]);
  assert.deepEqual(others.node.spec?.taints, both);
  assert.equal(others.node.metadata.annotations?.["talos.dev/owned-taints"], '["taint1"]');

  const allGone = patchNode(nodeWith({}, structuredClone(both), { taints: ["taint1", "gone"] }), new Map(), []);
  assert.deepEqual(allGone.node.spec?.taints, [foo, both[2]]);
  // As Talos: an owned key no longer on the Node stays listed.
  assert.equal(allGone.node.metadata.annotations?.["talos.dev/owned-taints"], '["gone"]');
});

test("an up-to-date Node is unchanged; a bad ownership annotation is a named error", () => {
  const current = nodeWith({ [ROLE]: "" }, [{ key: ROLE, effect: "NoSchedule" }], { labels: [ROLE], taints: [ROLE] });
  const { changed, node: same } = patchNode(current, new Map([[ROLE, ""]]), [
    { key: ROLE, effect: "NoSchedule", value: "" },
  ]);
  assert.equal(changed, false);
  assert.deepEqual(same, current);
  const bare: KubeNode = { metadata: { name: "n1" } };
  assert.equal(patchNode(bare, new Map(), []).changed, false);
  const bad = nodeWith({}, [], {});
  bad.metadata.annotations!["talos.dev/owned-labels"] = "label1";
  assert.throws(() => patchNode(bad, new Map(), []), OwnedAnnotationError);
  bad.metadata.annotations!["talos.dev/owned-labels"] = "[1]";
  assert.throws(() => patchNode(bad, new Map(), []), /not a list of strings/);
});

/** An API server answering from a script of replies, recording the requests. */
function fakeApi(replies: (() => unknown)[]): NodeApi & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async request<T>(method: string, path: string): Promise<T> {
      calls.push(`${method} ${path}`);
      const reply = replies.shift();
      assert.ok(reply, `unexpected ${method} ${path}`);
      return reply() as T;
    },
  };
}

test("sync: a conflicting replace is read and retried; an unregistered Node is NodeNotRegisteredError", async () => {
  const registered = () => nodeWith({}, [], {});
  const conflict = () => {
    throw new KubeApiError(409, "Conflict", "the object has been modified");
  };
  const api = fakeApi([registered, conflict, registered, () => ({})]);
  const want = { labels: new Map([["zone", "a"]]), taints: [], cordoned: false };
  const signal = new AbortController().signal;
  assert.equal(await syncNode(api, "n1", want, signal, logger("test")), true);
  assert.deepEqual(api.calls, [
    "GET /api/v1/nodes/n1",
    "PUT /api/v1/nodes/n1?fieldManager=talos",
    "GET /api/v1/nodes/n1",
    "PUT /api/v1/nodes/n1?fieldManager=talos",
  ]);

  const unchanged = fakeApi([() => nodeWith({ zone: "a" }, [], { labels: ["zone"] })]);
  assert.equal(await syncNode(unchanged, "n1", want, signal, logger("test")), false);
  assert.deepEqual(unchanged.calls, ["GET /api/v1/nodes/n1"]);

  const missing = fakeApi([
    () => {
      throw new KubeApiError(404, "NotFound", 'nodes "n1" not found');
    },
  ]);
  await assert.rejects(syncNode(missing, "n1", want, signal, logger("test")), NodeNotRegisteredError);
});

test("NodeStatus of a Node: the last Ready condition, cordon, labels and annotations", () => {
  const conditions = [
    { type: "MemoryPressure", status: "True" },
    { type: "Ready", status: "True" },
  ];
  const node: KubeNode = {
    metadata: { name: "n1", labels: { a: "1" }, annotations: { b: "2" } },
    spec: { unschedulable: true },
    status: { conditions },
  };
  assert.deepEqual(nodeStatusSpec(node), {
    nodename: "n1",
    nodeReady: true,
    unschedulable: true,
    labels: { a: "1" },
    annotations: { b: "2" },
  });
  conditions[1]!.status = "Unknown";
  assert.deepEqual(nodeStatusSpec({ metadata: { name: "n1" }, status: { conditions } }), {
    nodename: "n1",
    nodeReady: false,
    unschedulable: false,
    labels: {},
    annotations: {},
  });
});

test("cordon: Talos's cases (cordoned and marked; only a cordon so marked is lifted)", () => {
  const bare = (unschedulable: boolean, annotations?: Record<string, string>): KubeNode => ({
    metadata: { name: "n1", ...(annotations ? { annotations } : {}) },
    spec: unschedulable ? { unschedulable } : {},
  });
  const cordoned = (n: KubeNode, cordon: boolean) => {
    const { node } = patchNode(n, new Map(), [], cordon);
    return { unschedulable: node.spec?.unschedulable === true, annotations: node.metadata.annotations };
  };
  const mark = { "talos.dev/cordoned": "true" };
  assert.deepEqual(cordoned(bare(false), false), { unschedulable: false, annotations: {} });
  assert.deepEqual(cordoned(bare(false), true), { unschedulable: true, annotations: mark });
  assert.deepEqual(cordoned(bare(true), true), { unschedulable: true, annotations: {} });
  assert.deepEqual(cordoned(bare(true, mark), true), { unschedulable: true, annotations: mark });
  assert.deepEqual(cordoned(bare(true, mark), false), { unschedulable: false, annotations: {} });
  assert.deepEqual(cordoned(bare(true, { foo: "bar" }), false), { unschedulable: true, annotations: { foo: "bar" } });
});

test("NodeCordonedSpec while shutting down, upgrading or resetting; gone once booting or running", async (t) => {
  const state = new ResourceState();
  registerCatalog(state);
  const setStage = (stage: MachineStage) =>
    state.modify<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, "test.Sequencer", () => ({
      stage,
      status: { ready: false, unmetConditions: [] },
    }));
  const runtime = new ControllerRuntime(state);
  runtime.register(new NodeCordonedSpecController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const cordoned = async (stage: MachineStage) => {
    setStage(stage);
    await runtime.whenIdle();
    return state.get(K8S_NAMESPACE, NodeCordonedSpecType, "cordoned") !== undefined;
  };
  assert.equal(await cordoned("running"), false);
  for (const stage of ["shutting down", "upgrading", "resetting"] as const) {
    assert.equal(await cordoned(stage), true, stage);
    assert.equal(await cordoned("installing"), true, `${stage} then installing: unchanged`);
    assert.equal(await cordoned("booting"), false, `${stage} then booting`);
  }
  assert.equal(await cordoned("upgrading"), true);
  assert.equal(await cordoned("rebooting"), true, "rebooting: unchanged");
  assert.equal(await cordoned("running"), false);
});

test("a control plane's temporary admin credentials: CN admin, O system:masters, 10 min from a minute ago", async () => {
  const ca = await generateSelfSignedCA({ commonName: "kubernetes", algorithm: "ecdsa-p256" });
  // Only the fields the credentials read; the rest of the root secrets do not matter here.
  const root = { localEndpoint: "https://127.0.0.1:7445", issuingCA: { crt: ca.certPem, key: ca.keyPem } };
  const now = new Date("2026-01-02T03:04:05Z");
  const creds = await temporaryAdminCredentials(root as KubernetesRootSpec, now);
  assert.ok(creds);
  assert.equal(creds.server, "https://127.0.0.1:7445");
  assert.equal(creds.ca, ca.certPem);
  const cert = new X509Certificate(creds.cert);
  assert.equal(cert.subject, "O=system:masters\nCN=admin");
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  assert.equal(new Date(cert.validFrom).toISOString(), "2026-01-02T03:03:05.000Z");
  assert.equal(new Date(cert.validTo).toISOString(), "2026-01-02T03:14:05.000Z");
  assert.ok(cert.checkPrivateKey(createPrivateKey(creds.key)));
  assert.equal(await temporaryAdminCredentials({ ...root, issuingCA: undefined } as KubernetesRootSpec), undefined);
});
