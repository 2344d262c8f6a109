// The static pod server the kubelet reads (a real HTTP server on loopback), the
// static pods of `.machine.pods`, and StaticPodStatus from a fake kubelet that serves
// /pods/ over mutual TLS the way the real one does.
import assert from "node:assert/strict";
import https from "node:https";
import { isIP, type AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { KubeletStaticPodController } from "../../../../agent/src/controllers/k8s/kubelet-static-pod.js";
import {
  KubernetesDynamicCertsId,
  KubernetesDynamicCertsType,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
} from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import { StaticPodConfigController } from "../../../../agent/src/controllers/k8s/static-pod-config.js";
import { podListYaml, StaticPodServerController } from "../../../../agent/src/controllers/k8s/static-pod-server.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { generateSelfSignedCA, issueCertificate } from "../../../../agent/src/pki/certificates.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { NodenameType } from "../../../../agent/src/resources/catalog/cluster.js";
import {
  K8S_NAMESPACE,
  StaticPodServerStatusId,
  StaticPodServerStatusType,
  StaticPodStatusType,
  StaticPodType,
  staticPodStatusDefinition,
  type StaticPodServerStatusSpec,
  type StaticPodSpec,
  type StaticPodStatusSpec,
} from "../../../../agent/src/resources/catalog/k8s-controlplane.js";
import { RUNTIME_NAMESPACE, ServiceType } from "../../../../agent/src/resources/catalog/runtime.js";
import { SECRETS_NAMESPACE } from "../../../../agent/src/resources/catalog/secrets.js";
import { yamlSpec } from "../../../../agent/src/resources/definitions.js";
import { ControllerRuntime, type Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "../secrets/wait.js";

function start(t: TestContext, controllers: Controller[]): { state: ResourceState; runtime: ControllerRuntime } {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  for (const c of controllers) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { state, runtime };
}

async function get(url: string): Promise<{ status: number; contentType: string | null; body: string }> {
  const res = await fetch(url);
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

test("the static pod server serves every StaticPod as one PodList YAML, as Talos's yaml.v3 encodes it", async (t) => {
  const { state, runtime } = start(t, [new StaticPodServerController()]);
  await runtime.whenIdle();
  const url = state.get<StaticPodServerStatusSpec>(K8S_NAMESPACE, StaticPodServerStatusType, StaticPodServerStatusId)!
    .spec.url;
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.deepEqual(await get(url), {
    status: 200,
    contentType: "text/plain; charset=utf-8",
    body: "kind: PodList\nitems: []\napiversion: v1\n",
  });

  const pod = (name: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "kube-system", creationTimestamp: null },
    spec: { hostNetwork: true },
    status: {},
  });
  state.modify<StaticPodSpec>(
    K8S_NAMESPACE,
    StaticPodType,
    "kube-scheduler",
    "k8s.ControlPlaneStaticPodController",
    () => ({ pod: pod("kube-scheduler") }),
  );
  state.modify<StaticPodSpec>(
    K8S_NAMESPACE,
    StaticPodType,
    "kube-apiserver",
    "k8s.ControlPlaneStaticPodController",
    () => ({ pod: pod("kube-apiserver") }),
  );
  await runtime.whenIdle();
  const expected = [
    "kind: PodList",
    "items:",
    "    - apiVersion: v1",
    "      kind: Pod",
    "      metadata:",
    "          creationTimestamp: null",
    "          name: kube-apiserver",
    "          namespace: kube-system",
    "      spec:",
    "          hostNetwork: true",
    "      status: {}",
    "    - apiVersion: v1",
    "      kind: Pod",
    "      metadata:",
    "          creationTimestamp: null",
    "          name: kube-scheduler",
    "          namespace: kube-system",
    "      spec:",
    "          hostNetwork: true",
    "      status: {}",
    "apiversion: v1",
    "",
  ].join("\n");
  assert.equal((await get(url)).body, expected);
  assert.equal(podListYaml([pod("kube-apiserver"), pod("kube-scheduler")]), expected);

  state.destroy(K8S_NAMESPACE, StaticPodType, "kube-scheduler", { owner: "k8s.ControlPlaneStaticPodController" });
  await runtime.whenIdle();
  assert.doesNotMatch((await get(url)).body, /kube-scheduler/);
});

test("pods of .machine.pods are StaticPods named <namespace>-<name>; removed from the config, they go", async (t) => {
  const config = (pods: string) =>
    loadConfig(Buffer.from(`version: v1alpha1\nmachine:\n  type: worker\n  pods:\n${pods}`));
  const active = new Observed<ConfigBundle | undefined>(
    config(
      "    - apiVersion: v1\n      kind: Pod\n      metadata:\n        name: nginx\n      spec:\n        containers:\n          - name: nginx\n            image: nginx\n" +
        "    - apiVersion: v1\n      kind: Pod\n      metadata:\n        name: probe\n        namespace: monitoring\n",
    ),
  );
  const { state, runtime } = start(t, [new MachineConfigController(active), new StaticPodConfigController()]);
  await runtime.whenIdle();
  const ids = () =>
    state
      .list(K8S_NAMESPACE, StaticPodType)
      .map((r) => r.metadata.id)
      .sort();
  assert.deepEqual(ids(), ["default-nginx", "monitoring-probe"]);
  assert.deepEqual(state.get<StaticPodSpec>(K8S_NAMESPACE, StaticPodType, "default-nginx")!.spec.pod, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "nginx" },
    spec: { containers: [{ name: "nginx", image: "nginx" }] },
  });
  active.set(
    config(
      "    - apiVersion: v1\n      kind: Pod\n      metadata:\n        name: probe\n        namespace: monitoring\n",
    ),
  );
  await runtime.whenIdle();
  assert.deepEqual(ids(), ["monitoring-probe"]);
});

interface FakeKubelet {
  url: string;
  /** The client certificates' subjects, one per request. */
  clients: string[];
  pods: unknown[];
}

/** A kubelet serving /pods/ on loopback for `nodename`, accepting only client certificates of `ca`. */
async function fakeKubelet(
  t: TestContext,
  ca: Awaited<ReturnType<typeof generateSelfSignedCA>>,
  nodename: string,
): Promise<FakeKubelet> {
  const names = isIP(nodename) ? { ipAddresses: [nodename] } : { dnsNames: [nodename] };
  const serving = await issueCertificate(ca, {
    commonName: nodename,
    ...names,
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3_600_000,
    algorithm: "ecdsa-p256",
  });
  const fake: FakeKubelet = { url: "", clients: [], pods: [] };
  const server = https.createServer(
    { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      // The fake kubelet only serves TLS sockets, which carry the peer's certificate.
      fake.clients.push(String((req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject.CN));
      if (req.url !== "/pods/") {
        res.writeHead(404).end();
        return;
      }
      res
        .writeHead(200, { "Content-Type": "application/json" })
        .end(JSON.stringify({ kind: "PodList", apiVersion: "v1", metadata: {}, items: fake.pods }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  fake.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

const kubeletPod = (namespace: string, name: string, source: string, ready: string) => ({
  metadata: {
    name,
    namespace,
    annotations: { "kubernetes.io/config.source": source, "kubernetes.io/config.hash": "abc" },
  },
  spec: { containers: [{ name, image: "x" }] },
  status: {
    phase: "Running",
    conditions: [
      { type: "Initialized", status: "True", lastProbeTime: null, lastTransitionTime: "2024-07-01T10:00:00Z" },
      { type: "Ready", status: ready, lastProbeTime: null, lastTransitionTime: "2024-07-01T10:00:05Z" },
    ],
    podIP: "10.5.0.2",
  },
});

test("StaticPodStatus: static pods of the kubelet's /pods/ (file and http sources), asked with the apiserver's kubelet client certificate", async (t) => {
  const ca = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  const client = await issueCertificate(ca, {
    commonName: "apiserver-kubelet-client",
    organizations: ["system:masters"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3_600_000,
    algorithm: "ecdsa-p256",
  });
  const kubelet = await fakeKubelet(t, ca, "cp-1");
  kubelet.pods = [
    kubeletPod("kube-system", "kube-apiserver-cp-1", "http", "True"),
    kubeletPod("kube-system", "kube-scheduler-cp-1", "http", "False"),
    kubeletPod("monitoring", "probe-cp-1", "file", "True"),
    kubeletPod("kube-system", "coredns-abc", "api", "True"),
  ];
  const controller = new KubeletStaticPodController({
    kubeletURL: kubelet.url,
    kubeletCertPath: "/nonexistent/kubelet.crt",
    pollMs: 50,
  });
  const { state, runtime } = start(t, [controller]);
  const put = (ns: string, type: string, id: string, spec: unknown) => state.modify(ns, type, id, "fake", () => spec);
  put(RUNTIME_NAMESPACE, ServiceType, "kubelet", { running: true, healthy: true, unknown: false });
  put(K8S_NAMESPACE, NodenameType, "nodename", { nodename: "cp-1", hostnameVersion: "1", skipNodeRegistration: false });
  await runtime.whenIdle();
  assert.equal(state.list(K8S_NAMESPACE, StaticPodStatusType).length, 0, "no secrets: a worker cannot ask the kubelet");
  assert.deepEqual(kubelet.clients, []);

  put(SECRETS_NAMESPACE, KubernetesRootSecretsType, KubernetesRootSecretsId, {
    issuingCA: { crt: ca.certPem, key: ca.keyPem },
  });
  put(SECRETS_NAMESPACE, KubernetesDynamicCertsType, KubernetesDynamicCertsId, {
    apiServerKubeletClient: { crt: client.certPem, key: client.keyPem },
  });
  const ids = () =>
    state
      .list(K8S_NAMESPACE, StaticPodStatusType)
      .map((r) => r.metadata.id)
      .sort();
  await until("pod statuses", () => (ids().length === 3 ? true : undefined));
  assert.deepEqual(ids(), [
    "kube-system/kube-apiserver-cp-1",
    "kube-system/kube-scheduler-cp-1",
    "monitoring/probe-cp-1",
  ]);
  assert.equal(kubelet.clients[0], "apiserver-kubelet-client");
  const scheduler = state.get<StaticPodStatusSpec>(
    K8S_NAMESPACE,
    StaticPodStatusType,
    "kube-system/kube-scheduler-cp-1",
  )!;
  assert.deepEqual(scheduler.spec.podStatus, kubeletPod("kube-system", "kube-scheduler-cp-1", "http", "False").status);
  assert.equal(
    yamlSpec(staticPodStatusDefinition, scheduler.spec),
    [
      "conditions:",
      "    - lastProbeTime: null",
      '      lastTransitionTime: "2024-07-01T10:00:00Z"',
      '      status: "True"',
      "      type: Initialized",
      "    - lastProbeTime: null",
      '      lastTransitionTime: "2024-07-01T10:00:05Z"',
      '      status: "False"',
      "      type: Ready",
      "phase: Running",
      "podIP: 10.5.0.2",
      "",
    ].join("\n"),
  );

  // Polled: a pod the kubelet no longer runs loses its status.
  kubelet.pods = kubelet.pods.slice(0, 1);
  await until("stale statuses removed", () => (ids().length === 1 ? true : undefined));
  assert.deepEqual(ids(), ["kube-system/kube-apiserver-cp-1"]);

  put(RUNTIME_NAMESPACE, ServiceType, "kubelet", { running: false, healthy: false, unknown: false });
  await until("statuses torn down with the kubelet", () => (ids().length === 0 ? true : undefined));
});

test("StaticPodStatus: the kubelet must present a certificate for the node's name (an IP name checked against the IP SANs)", async (t) => {
  const ca = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  const client = await issueCertificate(ca, {
    commonName: "apiserver-kubelet-client",
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3_600_000,
    algorithm: "ecdsa-p256",
  });
  const kubelet = await fakeKubelet(t, ca, "10.5.0.2");
  kubelet.pods = [kubeletPod("kube-system", "kube-apiserver-10.5.0.2", "http", "True")];
  const statuses = async (nodename: string) => {
    const failures: string[] = [];
    const inner = new KubeletStaticPodController({
      kubeletURL: kubelet.url,
      kubeletCertPath: "/nonexistent/kubelet.crt",
      pollMs: 60_000,
    });
    const controller: Controller = {
      name: inner.name,
      inputs: inner.inputs,
      outputs: inner.outputs,
      reconcile: (ctx) =>
        inner.reconcile(ctx).catch((err: Error) => {
          failures.push(`${err.name}: ${err.message}`);
          throw err;
        }),
    };
    const { state } = start(t, [controller]);
    const put = (ns: string, type: string, id: string, spec: unknown) => state.modify(ns, type, id, "fake", () => spec);
    put(RUNTIME_NAMESPACE, ServiceType, "kubelet", { running: true, healthy: true, unknown: false });
    put(K8S_NAMESPACE, NodenameType, "nodename", { nodename, hostnameVersion: "1", skipNodeRegistration: false });
    put(SECRETS_NAMESPACE, KubernetesRootSecretsType, KubernetesRootSecretsId, {
      issuingCA: { crt: ca.certPem, key: ca.keyPem },
    });
    put(SECRETS_NAMESPACE, KubernetesDynamicCertsType, KubernetesDynamicCertsId, {
      apiServerKubeletClient: { crt: client.certPem, key: client.keyPem },
    });
    await until("an answer or a failure", () =>
      failures.length > 0 || state.list(K8S_NAMESPACE, StaticPodStatusType).length > 0 ? true : undefined,
    );
    return { ids: state.list(K8S_NAMESPACE, StaticPodStatusType).map((r) => r.metadata.id), failures };
  };
  assert.deepEqual(await statuses("10.5.0.2"), { ids: ["kube-system/kube-apiserver-10.5.0.2"], failures: [] });
  const other = await statuses("10.5.0.3");
  assert.deepEqual(other.ids, []);
  assert.match(other.failures[0] ?? "", /^KubeletPodsError: error fetching pod status: .*10\.5\.0\.3/);
});
