import { CLUSTER_NAMESPACE, LocalIdentityId } from "../../../../agent/src/controllers/cluster/node-identity.js";
import { IdentityType } from "../../../../agent/src/resources/catalog/cluster.js";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { parse, stringify } from "yaml";
import {
  clientCertificateValid,
  KubeletServiceController,
} from "../../../../agent/src/controllers/k8s/kubelet-service.js";
import { generateSelfSignedCA, issueCertificate, hourMs } from "../../../../agent/src/pki/index.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  KubeletSecretsType,
  KubeletSpecType,
  type KubeletSecretsSpec,
  type KubeletSpecSpec,
} from "../../../../agent/src/resources/catalog/k8s-kubelet.js";
import { MountStatusType, RUNTIME_NAMESPACE, ServiceType } from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "../secrets/wait.js";

const ca = await generateSelfSignedCA({ commonName: "kubernetes", algorithm: "ecdsa-p256" });
const otherCA = await generateSelfSignedCA({ commonName: "other", algorithm: "ecdsa-p256" });
const client = async (issuer: typeof ca, node: string) =>
  (
    await issueCertificate(issuer, {
      commonName: `system:node:${node}`,
      organizations: ["system:nodes"],
      extKeyUsage: ["clientAuth"],
      lifetimeMs: hourMs,
      algorithm: "ecdsa-p256",
    })
  ).certPem;

const spec = (nodename: string): KubeletSpecSpec => ({
  image: "i",
  args: [`--hostname-override=${nodename}`],
  extraMounts: [],
  expectedNodename: nodename,
  config: { kind: "KubeletConfiguration" },
});
const secrets: KubeletSecretsSpec = {
  endpoint: "https://127.0.0.1:7445",
  acceptedCAs: [ca.certPem],
  bootstrapTokenID: "abcdef",
  bootstrapTokenSecret: "0123456789abcdef",
};

test("client certificate check: node name (when Talos names the node) and an accepted CA", async () => {
  const cert = new X509Certificate(await client(ca, "worker-1"));
  assert.equal(clientCertificateValid(cert, "worker-1", [ca.certPem]), true);
  assert.equal(clientCertificateValid(cert, "", [ca.certPem]), true);
  assert.equal(clientCertificateValid(cert, "worker-2", [ca.certPem]), false);
  assert.equal(clientCertificateValid(cert, "worker-1", [otherCA.certPem]), false);
});

function setup(t: TestContext) {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-kubelet-ctl-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const calls: string[] = [];
  let running = false;
  const services = {
    isRunning: () => running,
    start: async () => {
      calls.push("start");
      running = true;
    },
    stop: async () => {
      calls.push("stop");
      running = false;
    },
  };
  const state = new ResourceState();
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new KubeletServiceController({ services, root, container: false }));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { root, calls, state, runtime };
}

test("the kubelet starts once EPHEMERAL, the node identity, CRI, KubeletSpec and KubeletSecrets are there; a changed spec restarts it", async (t) => {
  const { root, calls, state, runtime } = setup(t);
  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => spec("worker-1"));
  state.modify("secrets", KubeletSecretsType, KubeletId, "test", () => secrets);
  await runtime.whenIdle();
  assert.deepEqual(calls, [], "not before EPHEMERAL is mounted");
  state.modify(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL", "test", () => ({}));
  await runtime.whenIdle();
  assert.deepEqual(calls, [], "not before the node identity (and /etc/machine-id) is there");
  state.modify(CLUSTER_NAMESPACE, IdentityType, LocalIdentityId, "test", () => ({
    nodeId: "LpVa4dollS7wSHO8QIDV2hpuc7fEProRC49mX9HPePA",
  }));
  await runtime.whenIdle();
  assert.deepEqual(calls, [], "not before CRI is registered, after the overlays");
  assert.equal(existsSync(path.join(root, "etc/kubernetes")), false, "nothing written before");
  state.modify(RUNTIME_NAMESPACE, ServiceType, "cri", "test", () => ({}));
  await until("start", () => (calls.length === 1 ? true : undefined));
  assert.ok(
    readFileSync(path.join(root, "etc/kubernetes/bootstrap-kubeconfig"), "utf8").includes(
      "server: https://127.0.0.1:7445",
    ),
  );

  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => ({ ...spec("worker-1"), args: ["--v=2"] }));
  await until("restart", () => (calls.length === 3 ? true : undefined));
  assert.deepEqual(calls, ["start", "stop", "start"]);
  await runtime.whenIdle();
  assert.equal(calls.length, 3, "an unchanged spec does not restart it");
});

test("before a start: a client certificate of another node name is removed with its kubeconfig; the serving certificate is removed; the kubeconfig follows the endpoint", async (t) => {
  const { root, calls, state } = setup(t);
  const pki = path.join(root, "var/lib/kubelet/pki");
  mkdirSync(pki, { recursive: true });
  writeFileSync(path.join(pki, "kubelet.crt"), "serving");
  writeFileSync(path.join(pki, "kubelet-client-current.pem"), await client(ca, "worker-1"));
  const kubeconfig = path.join(root, "etc/kubernetes/kubeconfig-kubelet");
  mkdirSync(path.dirname(kubeconfig), { recursive: true });
  const kc = {
    apiVersion: "v1",
    kind: "Config",
    "current-context": "default",
    contexts: [{ name: "default", context: { cluster: "default-cluster", user: "default-auth" } }],
    clusters: [
      { name: "default-cluster", cluster: { server: "https://10.9.0.1:6443", "certificate-authority-data": "old" } },
    ],
  };
  writeFileSync(kubeconfig, stringify(kc));

  state.modify(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL", "test", () => ({}));
  state.modify(RUNTIME_NAMESPACE, ServiceType, "cri", "test", () => ({}));
  state.modify(CLUSTER_NAMESPACE, IdentityType, LocalIdentityId, "test", () => ({
    nodeId: "LpVa4dollS7wSHO8QIDV2hpuc7fEProRC49mX9HPePA",
  }));
  state.modify("secrets", KubeletSecretsType, KubeletId, "test", () => secrets);
  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => spec("worker-1"));
  await until("start", () => (calls.length === 1 ? true : undefined));
  assert.equal(existsSync(path.join(pki, "kubelet.crt")), false, "serving certificate removed");
  assert.equal(existsSync(path.join(pki, "kubelet-client-current.pem")), true, "matching client certificate kept");
  const updated = parse(readFileSync(kubeconfig, "utf8")) as typeof kc;
  assert.deepEqual(updated.clusters[0]!.cluster, {
    server: "https://127.0.0.1:7445",
    "certificate-authority-data": Buffer.from(ca.certPem).toString("base64"),
  });

  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => spec("worker-2"));
  await until("restart", () => (calls.length === 3 ? true : undefined));
  assert.equal(existsSync(pki), false, "the PKI of another node name is removed");
  assert.equal(existsSync(kubeconfig), false, "and the kubeconfig made from it");
});
