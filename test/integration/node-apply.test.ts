// The node's labels and taints put on its Node object in a real kube-apiserver (v1.30.3)
// backed by a real etcd: the controllers wait for the Node to be registered, apply the
// control plane's role label and taint and .machine.nodeLabels/.nodeTaints with Talos's
// ownership annotations, after a config change remove only what they own, and cordon the
// Node while the machine upgrades (lifting only their own cordon). A worker
// writes its own Node with the kubelet's kubeconfig (certificate files by path), and its
// NodeStatus follows the watched Node.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { after, before, describe, it, type TestContext } from "node:test";
import { loadConfig } from "../../agent/src/config/load.js";
import { MachineTypeController } from "../../agent/src/controllers/config/machine-type.js";
import { KubeApiError, KubeClient } from "../../agent/src/controllers/k8s/kube-client.js";
import { readKubeletCredentials } from "../../agent/src/controllers/k8s/kubelet-kubeconfig.js";
import { NodeApplyController, syncNode } from "../../agent/src/controllers/k8s/node-apply.js";
import { logger } from "../../agent/src/log.js";
import { NodeCordonedSpecController } from "../../agent/src/controllers/k8s/node-cordoned-spec.js";
import { NodeLabelSpecController } from "../../agent/src/controllers/k8s/node-label-spec.js";
import { NodeTaintSpecController } from "../../agent/src/controllers/k8s/node-taint-spec.js";
import { NodeStatusController } from "../../agent/src/controllers/k8s/node-status.js";
import { NodenameType, type NodenameSpec } from "../../agent/src/resources/catalog/cluster.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import { K8S_NAMESPACE } from "../../agent/src/resources/catalog/k8s-kubelet.js";
import { NodeStatusType, type NodeStatusSpec } from "../../agent/src/resources/catalog/k8s-nodes.js";
import {
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  type KubernetesRootSpec,
} from "../../agent/src/resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../agent/src/resources/catalog/secrets.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStage,
  type MachineStatusSpec,
} from "../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import type { KubeNode } from "../../agent/src/controllers/k8s/node-patch.js";
import { startApiServer, type ApiServer } from "./helpers/kube-apiserver.js";
import { until } from "../unit/controllers/secrets/wait.js";

const ROLE = "node-role.kubernetes.io/control-plane";
let api: ApiServer;

const configYaml = (type: string, extra: string) =>
  `version: v1alpha1\nmachine:\n  type: ${type}\n${extra}cluster:\n  controlPlane:\n    endpoint: https://127.0.0.1:6443\n`;

/** A store with the controllers running and this machine's config, node name and Kubernetes root secrets. */
function machine(t: TestContext, nodename: string, yaml: string, kubeletKubeconfig: string) {
  const state = new ResourceState();
  registerCatalog(state);
  const setConfig = (text: string) =>
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
      loadConfig(text),
    );
  setConfig(yaml);
  state.modify<NodenameSpec>(K8S_NAMESPACE, NodenameType, "nodename", "test.Nodename", () => ({
    nodename,
    hostnameVersion: "1",
    skipNodeRegistration: false,
  }));
  // What the cluster's root secrets give the apply on a control plane: the issuing CA and the local endpoint.
  state.modify<KubernetesRootSpec>(
    SECRETS_NAMESPACE,
    KubernetesRootSecretsType,
    KubernetesRootSecretsId,
    "test",
    () => ({
      name: "test",
      endpoint: "https://127.0.0.1:6443",
      localEndpoint: api.server,
      certSANs: [],
      apiServerIPs: [],
      dnsDomain: "cluster.local",
      issuingCA: { crt: api.ca.certPem, key: api.ca.keyPem },
      acceptedCAs: [{ crt: api.ca.certPem }],
      serviceAccount: "",
      aggregatorCA: { crt: "", key: "" },
      aesCBCEncryptionSecret: "",
      bootstrapTokenID: "",
      bootstrapTokenSecret: "",
      secretboxEncryptionSecret: "",
    }),
  );
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 50, maxBackoffMs: 500 });
  for (const c of [
    new MachineTypeController(),
    new NodeLabelSpecController(),
    new NodeTaintSpecController(),
    new NodeCordonedSpecController(),
    new NodeApplyController({ kubeletKubeconfig, kubeconfigPollMs: 100 }),
    new NodeStatusController({ kubeletKubeconfig, kubeconfigPollMs: 100 }),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const setStage = (stage: MachineStage) =>
    state.modify<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, "test.Sequencer", () => ({
      stage,
      status: { ready: stage === "running", unmetConditions: [] },
    }));
  return { state, runtime, setConfig, setStage };
}

const nodePath = (name: string) => `/api/v1/nodes/${name}`;
const getNode = (name: string) => api.client.request<KubeNode>("GET", nodePath(name));

/** The taint the API server's admission puts on every new Node until its controller sees it Ready. */
const NOT_READY = { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" };

/** Creates a Node as a kubelet registers it (with the labels it sets itself). */
const registerNode = (name: string, labels: Record<string, string>) =>
  api.client.request("POST", "/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name, labels } });

/** What the controllers own of a Node: its labels, taints and the two ownership annotations. */
const applied = (node: KubeNode) => ({
  labels: node.metadata.labels ?? {},
  taints: node.spec?.taints ?? [],
  ownedLabels: node.metadata.annotations?.["talos.dev/owned-labels"],
  ownedTaints: node.metadata.annotations?.["talos.dev/owned-taints"],
  unschedulable: node.spec?.unschedulable === true,
  cordoned: node.metadata.annotations?.["talos.dev/cordoned"],
});

/** Reads the Node until `expected` holds (the controllers retry with backoff, bounded here at 60 s). */
async function nodeBecomes(name: string, expected: ReturnType<typeof applied>): Promise<void> {
  const end = Date.now() + 60_000;
  let last: unknown;
  for (;;) {
    last = await getNode(name).then(applied, (err: unknown) => String(err));
    if (isDeepStrictEqual(last, expected)) return;
    if (Date.now() > end) assert.deepEqual(last, expected);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("Node labels and taints against a real kube-apiserver and etcd", { timeout: 600_000 }, () => {
  before(async () => {
    api = await startApiServer("node-apply-");
  });
  after(() => api?.stop());

  it("a control plane: applied once the Node exists; only owned ones removed on a config change; cordon", async (t) => {
    const name = "cp-1";
    const labelsYaml = "  nodeLabels:\n    zone: a\n    rack: r1\n  nodeTaints:\n    gpu: 'true:NoExecute'\n";
    // No kubelet kubeconfig: the admin's applies the labels and taints; NodeStatus waits for the kubelet's.
    const { runtime, setConfig, setStage } = machine(
      t,
      name,
      configYaml("controlplane", labelsYaml),
      path.join(api.dir, "no-kubelet-kubeconfig"),
    );
    await runtime.whenIdle();
    assert.ok((runtime.runCounts()["k8s.NodeApplyController"] ?? 0) >= 1, "the apply ran before the Node existed");
    await assert.rejects(getNode(name), /404/);
    // Someone else's label with another value than the config's: never taken over, never removed.
    await registerNode(name, { "kubernetes.io/hostname": name, zone: "b" });
    await nodeBecomes(name, {
      labels: { "kubernetes.io/hostname": name, zone: "b", [ROLE]: "", rack: "r1" },
      taints: [NOT_READY, { key: "gpu", value: "true", effect: "NoExecute" }, { key: ROLE, effect: "NoSchedule" }],
      ownedLabels: `["${ROLE}","rack"]`,
      ownedTaints: `["gpu","${ROLE}"]`,
      unschedulable: false,
      cordoned: undefined,
    });

    // Someone else adds a label and a taint of their own.
    const node = await getNode(name);
    node.metadata.labels!.team = "x";
    node.spec!.taints!.push({ key: "maintenance", effect: "NoSchedule" });
    await api.client.request("PUT", nodePath(name), node);

    setConfig(`${configYaml("controlplane", "")}  allowSchedulingOnControlPlanes: true\n`);
    await nodeBecomes(name, {
      labels: { "kubernetes.io/hostname": name, zone: "b", [ROLE]: "", team: "x" },
      taints: [NOT_READY, { key: "maintenance", effect: "NoSchedule" }],
      ownedLabels: `["${ROLE}"]`,
      ownedTaints: undefined,
      unschedulable: false,
      cordoned: undefined,
    });

    // An upgrade cordons the Node (marked as the node's own cordon); running again lifts it.
    const settled = {
      labels: { "kubernetes.io/hostname": name, zone: "b", [ROLE]: "", team: "x" },
      taints: [NOT_READY, { key: "maintenance", effect: "NoSchedule" }],
      ownedLabels: `["${ROLE}"]`,
      ownedTaints: undefined,
    };
    setStage("upgrading");
    await nodeBecomes(name, { ...settled, unschedulable: true, cordoned: "true" });
    setStage("running");
    await nodeBecomes(name, { ...settled, unschedulable: false, cordoned: undefined });
  });

  it("a worker: writes its own Node with the kubelet's kubeconfig once written; taints refused; NodeStatus follows the Node", async (t) => {
    const name = "worker-1";
    const kubelet = await api.issueClient(`system:node:${name}`, ["system:nodes"]);
    // The kubelet keeps certificate and key in one file and names it in its kubeconfig.
    const pem = path.join(api.dir, "kubelet-client-current.pem");
    writeFileSync(pem, kubelet.certPem + kubelet.keyPem);
    const kubeconfig = path.join(api.dir, "kubeconfig-kubelet");
    const { state } = machine(t, name, configYaml("worker", "  nodeLabels:\n    zone: w\n"), kubeconfig);
    await registerNode(name, { "kubernetes.io/hostname": name });
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: default-cluster",
        "  cluster:",
        `    certificate-authority-data: ${Buffer.from(api.ca.certPem).toString("base64")}`,
        `    server: ${api.server}`,
        "contexts:",
        "- name: default-context",
        "  context: { cluster: default-cluster, user: default-auth }",
        "current-context: default-context",
        "users:",
        "- name: default-auth",
        `  user: { client-certificate: ${pem}, client-key: ${pem} }`,
        "",
      ].join("\n"),
    );
    await nodeBecomes(name, {
      labels: { "kubernetes.io/hostname": name, zone: "w" },
      taints: [NOT_READY],
      ownedLabels: '["zone"]',
      ownedTaints: undefined,
      unschedulable: false,
      cordoned: undefined,
    });
    const node = await getNode(name);
    const managers = (node.metadata.managedFields as { manager: string; operation: string }[]).map(
      (f) => `${f.manager}/${f.operation}`,
    );
    assert.ok(managers.includes("talos/Update"), managers.join(", "));

    // NodeStatus follows the watched Node: as applied, then Ready once its condition says so.
    const status = (ready: boolean) =>
      until(`NodeStatus ready=${ready}`, () => {
        const spec = state.get<NodeStatusSpec>(K8S_NAMESPACE, NodeStatusType, name)?.spec;
        return spec?.nodeReady === ready && spec.labels.zone === "w" ? spec : undefined;
      });
    assert.deepEqual(await status(false), {
      nodename: name,
      nodeReady: false,
      unschedulable: false,
      labels: { "kubernetes.io/hostname": name, zone: "w" },
      annotations: { "talos.dev/owned-labels": '["zone"]' },
    });
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const ready = {
      type: "Ready",
      status: "True",
      reason: "KubeletReady",
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
    await api.client.request("PUT", `${nodePath(name)}/status`, {
      ...(await getNode(name)),
      status: { conditions: [ready] },
    });
    assert.equal((await status(true)).nodeReady, true);
    assert.deepEqual(
      state.list(K8S_NAMESPACE, NodeStatusType).map((r) => r.metadata.id),
      [name],
    );
    // NodeRestriction lets a kubelet change its labels but never its taints: refused for 10 s of retries, as Talos is.
    const asKubelet = new KubeClient(await readKubeletCredentials(kubeconfig).then((c) => c!));
    t.after(() => asKubelet.close());
    const started = Date.now();
    const want = { labels: new Map([["zone", "w"]]), taints: [{ key: "gpu", effect: "NoSchedule", value: "" }] };
    await assert.rejects(
      syncNode(asKubelet, name, { ...want, cordoned: false }, new AbortController().signal, logger("test")),
      (err: unknown) =>
        err instanceof KubeApiError && err.status === 403 && /not allowed to modify taints/.test(err.message),
    );
    assert.ok(Date.now() - started >= 10_000, "retried for 10 s");

    // A deleted Node takes its NodeStatus with it.
    await api.client.request("DELETE", nodePath(name));
    await until("NodeStatus gone", () => (state.list(K8S_NAMESPACE, NodeStatusType).length === 0 ? true : undefined));
  });
});
