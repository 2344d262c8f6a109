// ManifestController and ExtraManifestController in a controller runtime: what a
// control plane publishes, what a worker does not, extra manifests fetched over HTTP
// (with extraManifestHeaders) and inline ones, ids as Talos names them.

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { loadConfig } from "../../../../agent/src/config/index.js";
import { ExtraManifestController } from "../../../../agent/src/controllers/k8s/extra-manifest.js";
import { ManifestController } from "../../../../agent/src/controllers/k8s/manifest.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
} from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  CONTROLPLANE_NAMESPACE,
  ManifestType,
  manifestDefinition,
  type ManifestSpec,
} from "../../../../agent/src/resources/catalog/k8s-manifests.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  NetworkStatusId,
  NetworkStatusType,
} from "../../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { encodeSpec, yamlSpec } from "../../../../agent/src/resources/definitions.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { decode } from "../../../../agent/src/api/index.js";

function harness(t: { after(fn: () => void): void }) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new ManifestController());
  runtime.register(new ExtraManifestController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const setConfig = (type: string, text: string) => {
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () => loadConfig(text));
    state.modify(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId, "test", () => type);
  };
  const ids = () =>
    state
      .list<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType)
      .map((r) => r.metadata.id)
      .sort();
  return { state, runtime, setConfig, ids };
}

const cluster = (extra: string) => `version: v1alpha1
machine:
  type: controlplane
cluster:
  controlPlane:
    endpoint: https://10.5.0.2:6443
  token: 3xpfxm.8sa7xd2dc4kf5xyq
${extra}`;

test("a control plane publishes Talos's manifest ids; a worker none; they go when the node stops being a control plane", async (t) => {
  const { runtime, setConfig, ids } = harness(t);
  setConfig("controlplane", cluster(""));
  await runtime.whenIdle();
  assert.deepEqual(ids(), [
    "00-kubelet-bootstrapping-token",
    "01-csr-approver-role-binding",
    "01-csr-node-bootstrap",
    "01-csr-renewal-role-binding",
    "03-default-pod-security-policy",
    "05-flannel",
    "10-kube-proxy",
    "11-core-dns",
    "11-core-dns-svc",
    "11-kube-config-in-cluster",
  ]);
  setConfig("worker", cluster(""));
  await runtime.whenIdle();
  assert.deepEqual(ids(), []);
});

test("extra manifests: fetched over HTTP with the configured headers once the network is ready, inline ones parsed, ids priority-name", async (t) => {
  const seen: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers["x-token"] as string | undefined);
    if (req.url === "/cni.yaml")
      res.end("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: cni\n  namespace: kube-system\n");
    else if (req.url === "/extra.yaml")
      res.end(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: extra\n",
      );
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { state, runtime, setConfig, ids } = harness(t);
  setConfig(
    "controlplane",
    cluster(`  network:
    cni:
      name: custom
      urls:
        - ${base}/cni.yaml
  proxy:
    disabled: true
  coreDNS:
    disabled: true
  apiServer:
    disablePodSecurityPolicy: true
  extraManifests:
    - ${base}/extra.yaml
  extraManifestHeaders:
    X-Token: secret
  inlineManifests:
    - name: settings
      contents: |
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: settings
`),
  );
  await runtime.whenIdle();
  assert.deepEqual(
    ids(),
    [
      "00-kubelet-bootstrapping-token",
      "01-csr-approver-role-binding",
      "01-csr-node-bootstrap",
      "01-csr-renewal-role-binding",
      "11-kube-config-in-cluster",
    ],
    "no extra manifest before the network is ready",
  );
  assert.deepEqual(seen, []);
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  }));
  await runtime.whenIdle();
  assert.deepEqual(ids(), [
    "00-kubelet-bootstrapping-token",
    "01-csr-approver-role-binding",
    "01-csr-node-bootstrap",
    "01-csr-renewal-role-binding",
    `05-${base}/cni.yaml`,
    "11-kube-config-in-cluster",
    `99-${base}/extra.yaml`,
    "99-settings",
  ]);
  assert.deepEqual(seen, [undefined, "secret"], "CNI urls without headers, extra manifests with them");
  const extra = state.get<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType, `99-${base}/extra.yaml`)!.spec;
  assert.deepEqual(
    extra.items.map((o) => o.kind),
    ["Namespace", "ConfigMap"],
  );
  assert.deepEqual(state.get<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType, "99-settings")!.spec.items, [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" } },
  ]);
});

test("a Manifest's wire and YAML forms: objects as google.protobuf.Struct, YAML the list of objects", () => {
  const spec: ManifestSpec = {
    items: [
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "a", labels: null },
        data: { count: 1, b: true, l: ["x"] },
      },
    ],
  };
  const decoded = decode("talos.resource.definitions.k8s.ManifestSpec", encodeSpec(manifestDefinition, spec)) as {
    items: { object: { fields: Record<string, unknown> } }[];
  };
  const fields = decoded.items[0]!.object.fields;
  assert.deepEqual(Object.keys(fields), ["apiVersion", "kind", "metadata", "data"]);
  assert.equal(
    yamlSpec(manifestDefinition, spec),
    "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n      name: a\n      labels: null\n  data:\n      count: 1\n      b: true\n      l:\n          - x\n",
  );
});
