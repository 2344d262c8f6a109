// The bootstrap manifests applied to a real kube-apiserver (v1.30.3) backed by a real
// etcd on loopback: every object created, a second apply updates nothing, a bad object
// is reported while the others apply.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  applyObjects,
  LocalLock,
  ManifestApplyController,
  ManifestApplyError,
} from "../../agent/src/controllers/k8s/manifest-apply.js";
import { ManifestController } from "../../agent/src/controllers/k8s/manifest.js";
import { loadConfig } from "../../agent/src/config/index.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
} from "../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import {
  CONTROLPLANE_NAMESPACE,
  ManifestStatusId,
  ManifestStatusType,
  ManifestType,
  type ManifestStatusSpec,
} from "../../agent/src/resources/catalog/k8s-manifests.js";
import { networkDefinitions } from "../../agent/src/resources/catalog/network.js";
import { RUNTIME_NAMESPACE, ServiceType } from "../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime, type Controller } from "../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { bootstrapManifestsInput } from "../../agent/src/controllers/k8s/manifest-input.js";
import { renderBootstrapManifests } from "../../agent/src/controllers/k8s/manifest-templates.js";
import { KubeClient } from "../../agent/src/controllers/k8s/kube-client.js";
import type { V1Alpha1Config } from "../../agent/src/config/types/v1alpha1.js";
import type { KubernetesObject } from "../../agent/src/resources/catalog/k8s-manifests.js";
import { renderKubeconfig } from "../../agent/src/pki/index.js";
import { KubernetesSecretsId, KubernetesSecretsType } from "../../agent/src/resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../agent/src/resources/catalog/secrets.js";
import { logger } from "../../agent/src/log.js";
import { startApiServer, type ApiServer } from "./helpers/kube-apiserver.js";
import {
  defaultClusterChecks,
  runChecks,
  type CheckContext,
  type NodeReader,
} from "../../agent/src/machined/health/checks.js";

/** Resolves once ManifestStatus exists, on its creation event. */
async function statusCreated(state: ResourceState): Promise<void> {
  const ac = new AbortController();
  await new Promise<void>((resolve) => {
    state.watch({ namespace: CONTROLPLANE_NAMESPACE, type: ManifestStatusType }, { signal: ac.signal }, () => {
      if (state.get(CONTROLPLANE_NAMESPACE, ManifestStatusType, ManifestStatusId)) resolve();
    });
    if (state.get(CONTROLPLANE_NAMESPACE, ManifestStatusType, ManifestStatusId)) resolve();
  });
  ac.abort();
}

/** Resolves once the CRD reports Established (read, else after a bounded watch of it). */
/**
 * Waits until the API server serves a group version: an established CRD's group can still answer 404
 * for a moment, until its handler is installed.
 */
async function groupVersionServed(client: KubeClient, path: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const served = await client.request("GET", path).then(
      () => true,
      (err: unknown) => {
        if (attempt >= 100) throw err;
        return false;
      },
    );
    if (served) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function crdEstablished(client: KubeClient, name: string): Promise<void> {
  const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  const established = (o: KubernetesObject) =>
    ((o.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some(
      (c) => c.type === "Established" && c.status === "True",
    );
  const current = await client.request<KubernetesObject & { metadata: { resourceVersion: string } }>(
    "GET",
    `${path}/${name}`,
  );
  if (established(current)) return;
  // KubeClient reads a response whole, so this watch from the version read returns when the server ends it (10 s);
  // the API server establishes a CRD within a second or two.
  await client
    .request(
      "GET",
      `${path}?watch=1&fieldSelector=metadata.name%3D${name}&resourceVersion=${current.metadata.resourceVersion}&timeoutSeconds=10`,
    )
    .catch(() => undefined);
  const after = await client.request<KubernetesObject>("GET", `${path}/${name}`);
  assert.ok(established(after), `CRD ${name} established`);
}

const config: V1Alpha1Config = {
  machine: { type: "controlplane", features: { kubePrism: { enabled: true, port: 7445 } } },
  cluster: {
    controlPlane: { endpoint: "https://127.0.0.1:6443" },
    token: "3xpfxm.8sa7xd2dc4kf5xyq",
    apiServer: { disablePodSecurityPolicy: true },
  },
};

let api: ApiServer;
let client: KubeClient;

describe("bootstrap manifests against a real kube-apiserver and etcd", { timeout: 1_800_000 }, () => {
  before(async () => {
    api = await startApiServer("manifest-apply-");
    client = api.client;
  });
  after(() => api?.stop());

  it("created once, never updated, a bad object reported while the others apply", async () => {
    const manifests = renderBootstrapManifests(bootstrapManifestsInput(config)!);
    // A namespaced object listed before its Namespace (the apply puts namespaces first), and one kind no server serves.
    const extra: KubernetesObject[] = [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "demo" }, data: { a: "1" } },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } },
      { apiVersion: "example.org/v1", kind: "Widget", metadata: { name: "bad" } },
    ];
    const objects = [...manifests.flatMap((m) => m.objects), ...extra];
    const log = logger("test");
    const first = await applyObjects(client, objects, log).then(
      () => assert.fail("the bad object was not reported"),
      (err: unknown) => err,
    );
    assert.ok(first instanceof ManifestApplyError);
    assert.deepEqual(first.failures.length, 1, first.failures.join("\n"));
    assert.match(first.failures[0]!, /^error creating mapping for object example.org\/v1\/Widget\/bad: /);

    const versions = new Map<string, string>();
    for (const obj of objects.slice(0, -1)) {
      const m = await client.mapping(String(obj.apiVersion), String(obj.kind));
      const meta = obj.metadata as { name: string; namespace?: string };
      const got = await client.request<KubernetesObject>(
        "GET",
        `${KubeClient.collectionPath(m, meta.namespace)}/${encodeURIComponent(meta.name)}`,
      );
      const gotMeta = got.metadata as { resourceVersion: string; managedFields?: { manager: string }[] };
      // The API server lists no managed fields for an object with nothing but metadata (a bare ServiceAccount).
      assert.ok(
        (gotMeta.managedFields ?? []).every((f) => f.manager === "talos"),
        `${String(obj.kind)}/${meta.name} created by field manager talos`,
      );
      versions.set(`${String(obj.kind)}/${meta.namespace ?? ""}/${meta.name}`, gotMeta.resourceVersion);
    }
    assert.equal(versions.size, objects.length - 1);

    const second = await applyObjects(client, objects, log).catch((err: unknown) => err);
    assert.ok(second instanceof ManifestApplyError && second.failures.length === 1);
    for (const obj of objects.slice(0, -1)) {
      const m = await client.mapping(String(obj.apiVersion), String(obj.kind));
      const meta = obj.metadata as { name: string; namespace?: string };
      const got = await client.request<KubernetesObject>(
        "GET",
        `${KubeClient.collectionPath(m, meta.namespace)}/${encodeURIComponent(meta.name)}`,
      );
      assert.equal(
        (got.metadata as { resourceVersion: string }).resourceVersion,
        versions.get(`${String(obj.kind)}/${meta.namespace ?? ""}/${meta.name}`),
        `${String(obj.kind)}/${meta.name} unchanged`,
      );
    }
  });

  it("ManifestApplyController: waits for etcd, applies under the lock, publishes ManifestStatus; a bad manifest fails the run and the rest still applies", {
    timeout: 60_000,
  }, async (t) => {
    const state = new ResourceState();
    registerCatalog(state, networkDefinitions);
    const runtime = new ControllerRuntime(state, { initialBackoffMs: 20, maxBackoffMs: 200 });
    let failed!: (err: unknown) => void;
    let failure = new Promise<unknown>((resolve) => (failed = resolve));
    const locked: string[] = [];
    const lock = new LocalLock();
    runtime.register(new ManifestController());
    runtime.register(
      new ManifestApplyController(
        { withLock: (key, signal, fn) => (locked.push(key), lock.withLock(key, signal, fn)) },
        (err) => failed(err),
      ),
    );
    // An extra manifest of this test's own, in the shared Manifest type.
    const extraWriter: Controller = {
      name: "test.ExtraWriter",
      inputs: [],
      outputs: [{ type: ManifestType, kind: "shared" }],
      reconcile: async () => undefined,
    };
    runtime.register(extraWriter);
    const ac = new AbortController();
    t.after(() => ac.abort());
    runtime.start(ac.signal);
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
      loadConfig(
        "version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  controlPlane:\n    endpoint: https://127.0.0.1:6443\n  token: abcdef.0123456789abcdef\n  apiServer:\n    disablePodSecurityPolicy: true\n  coreDNS:\n    disabled: true\n",
      ),
    );
    state.modify(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId, "test", () => "controlplane");
    await runtime.whenIdle();
    const status = () =>
      state.get<ManifestStatusSpec>(CONTROLPLANE_NAMESPACE, ManifestStatusType, ManifestStatusId)?.spec;
    assert.equal(status(), undefined, "nothing applied before the Kubernetes secrets exist");
    const localhostAdminKubeconfig = renderKubeconfig({
      clusterName: "test",
      endpoint: api.server,
      caPem: api.ca.certPem,
      certPem: api.admin.certPem,
      keyPem: api.admin.keyPem,
      username: "admin",
      contextName: "admin",
    });
    state.modify(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId, "test", () => ({
      schedulerKubeconfig: "",
      controllerManagerKubeconfig: "",
      localhostAdminKubeconfig,
      adminKubeconfig: "",
    }));
    await runtime.whenIdle();
    assert.equal(status(), undefined, "nothing applied before etcd is healthy");
    assert.deepEqual(locked, []);

    state.modify(RUNTIME_NAMESPACE, ServiceType, "etcd", "test", () => ({
      running: true,
      healthy: true,
      unknown: false,
    }));
    const ids = [
      "00-kubelet-bootstrapping-token",
      "01-csr-approver-role-binding",
      "01-csr-node-bootstrap",
      "01-csr-renewal-role-binding",
      "05-flannel",
      "10-kube-proxy",
      "11-kube-config-in-cluster",
    ];
    await Promise.race([statusCreated(state), failure.then((err) => assert.fail(`apply failed: ${String(err)}`))]);
    assert.deepEqual(status(), { manifestsApplied: ids });
    assert.deepEqual(locked, ["talos:v1:manifestApplyMutex"]);
    const token = await client.request<{ stringData?: unknown; data: Record<string, string> }>(
      "GET",
      "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef",
    );
    assert.equal(Buffer.from(token.data["token-secret"]!, "base64").toString(), "0123456789abcdef");

    failure = new Promise<unknown>((resolve) => (failed = resolve));
    // A manifest whose second object is invalid: the first and third are still created, the run fails, the status stays.
    state.modify(CONTROLPLANE_NAMESPACE, ManifestType, "99-broken", "test.ExtraWriter", () => ({
      items: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "before-bad", namespace: "kube-system" } },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "Not_A_Valid_Name", namespace: "kube-system" } },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "after-bad", namespace: "kube-system" } },
      ],
    }));
    const err = await failure;
    assert.ok(err instanceof ManifestApplyError);
    assert.match(
      err.failures.join("\n"),
      /^error creating \/v1\/ConfigMap\/Not_A_Valid_Name: POST \/api\/v1\/namespaces\/kube-system\/configmaps: 422 ConfigMap "Not_A_Valid_Name" is invalid/,
    );
    for (const name of ["before-bad", "after-bad"])
      await client.request("GET", `/api/v1/namespaces/kube-system/configmaps/${name}`);
    assert.deepEqual(status(), { manifestsApplied: ids }, "the failed run publishes no status");
  });

  it("a custom resource listed before its CRD: the CRD goes first; the resource is created by the next apply once its kind is served", async () => {
    const crd: KubernetesObject = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.example.org" },
      spec: {
        group: "example.org",
        names: { kind: "Gadget", listKind: "GadgetList", plural: "gadgets", singular: "gadget" },
        scope: "Cluster",
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: { spec: { type: "object", properties: { size: { type: "integer" } } } },
              },
            },
          },
        ],
      },
    };
    const gadget: KubernetesObject = {
      apiVersion: "example.org/v1",
      kind: "Gadget",
      metadata: { name: "g1" },
      spec: { size: 3 },
    };
    const log = logger("test");
    const created = await applyObjects(client, [gadget, crd], log).catch((err: unknown) => err);
    // The API server serves a new group only once the CRD is established: until then the kind has no match.
    if (created instanceof ManifestApplyError)
      assert.match(created.failures.join("\n"), /^error creating mapping for object example.org\/v1\/Gadget\/g1: /);
    else
      assert.deepEqual(created, [
        "apiextensions.k8s.io/v1/CustomResourceDefinition/gadgets.example.org",
        "example.org/v1/Gadget/g1",
      ]);
    await client.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.org");
    await crdEstablished(client, "gadgets.example.org");
    await groupVersionServed(client, "/apis/example.org/v1");
    const next = await applyObjects(client, [gadget, crd], log);
    assert.deepEqual(next, created instanceof ManifestApplyError ? ["example.org/v1/Gadget/g1"] : []);
    const got = await client.request<{ spec: { size: number } }>("GET", "/apis/example.org/v1/gadgets/g1");
    assert.equal(got.spec.size, 3);
  });

  it("the health checks' Kubernetes reads through the same client: Talos's texts for a cluster without nodes, SKIP without CoreDNS", async () => {
    // Runs after the apply tests: kube-proxy's DaemonSet exists, no controller-manager runs, so no pods and no ReplicaSets.
    const ctx: CheckContext = {
      cluster: {
        nodes: () => [{ internalIP: "127.0.0.1", ips: ["127.0.0.1"] }],
        nodesByType: (t) => (t === "controlplane" ? [{ internalIP: "127.0.0.1", ips: ["127.0.0.1"] }] : []),
      },
      nodes: {} as NodeReader, // the Kubernetes checks ask no node
      kube: async () => client,
    };
    const last = async (description: string): Promise<string> => {
      const lines: string[] = [];
      const check = defaultClusterChecks().find((c) => c.description === description)!;
      // A hundredth of Talos's times: attempts of 50-300 ms, a failing check gives up after 2-3 s.
      await runChecks(ctx, [check], (l) => lines.push(l), new AbortController().signal, 0.01).catch(() => undefined);
      return lines.at(-1)!;
    };
    assert.equal(
      await last("all k8s nodes to report"),
      'waiting for all k8s nodes to report: can\'t find expected node with IPs ["127.0.0.1"]',
    );
    assert.equal(await last("all k8s nodes to report ready"), "waiting for all k8s nodes to report ready: OK");
    assert.equal(
      await last("kube-proxy to report ready"),
      'waiting for kube-proxy to report ready: no pods found for namespace "kube-system" and label selector "k8s-app=kube-proxy"',
    );
    assert.equal(await last("coredns to report ready"), "waiting for coredns to report ready: SKIP");
    assert.equal(
      await last("all control plane components to be ready"),
      'waiting for all control plane components to be ready: can\'t find expected node with IPs ["127.0.0.1"]',
    );
  });
});
