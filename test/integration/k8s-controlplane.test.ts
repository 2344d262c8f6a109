// The control plane resources through the real sandbox (machined + apid, mutual TLS)
// after a generated control plane config is applied, as `talosctl get` reads them,
// and the static pod server the node publishes for the kubelet.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import type { NodeClient } from "../../agent/src/client/client.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-controlplane-"));
let sandbox: SandboxProcess;
let admin: NodeClient;

interface WireResource {
  metadata: { namespace: string; id: string; owner: string; version: string };
  spec: { yaml_spec: string };
}

before(async () => {
  ({ sandbox, admin } = await startConfiguredSandbox({
    clusterName: "controlplane",
    stateDir,
    args: ["--apid-in-process"],
  }));
});

after(async () => {
  admin?.close();
  await sandbox?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const getResource = async (namespace: string, type: string, id: string) =>
  ((await eventually(() => admin.resourceGet(namespace, type, id))) as { resource: WireResource }).resource;

test("APIServerConfig of the applied control plane config, as talosctl get -o yaml shows it", async () => {
  const res = await getResource("controlplane", "APIServerConfigs.kubernetes.talos.dev", "kube-apiserver");
  assert.equal(res.metadata.owner, "k8s.ControlPlaneAPIServerController");
  assert.equal(
    res.spec.yaml_spec,
    [
      "image: registry.k8s.io/kube-apiserver:v1.30.3",
      'cloudProvider: ""',
      "controlPlaneEndpoint: https://127.0.0.1:6443",
      "etcdServers:",
      "    - https://localhost:2379",
      "localPort: 6443",
      "serviceCIDR:",
      "    - 10.96.0.0/12",
      "extraArgs: {}",
      "extraVolumes: []",
      "environmentVariables: {}",
      "podSecurityPolicyEnabled: false",
      "advertisedAddress: $(POD_IP)",
      "resources:",
      "    requests:",
      '        cpu: ""',
      '        memory: ""',
      "    limits: {}",
      "",
    ].join("\n"),
  );
  const scheduler = await getResource("controlplane", "SchedulerConfigs.kubernetes.talos.dev", "kube-scheduler");
  assert.match(scheduler.spec.yaml_spec, /^enabled: true\nimage: registry.k8s.io\/kube-scheduler:v1.30.3\n/);
  const audit = await getResource("controlplane", "AuditPolicyConfigs.kubernetes.talos.dev", "audit-policy");
  assert.equal(
    audit.spec.yaml_spec,
    "config:\n    apiVersion: audit.k8s.io/v1\n    kind: Policy\n    rules:\n        - level: Metadata\n",
  );
});

test("no static pods without a healthy etcd; the static pod server answers an empty PodList at its published URL", async () => {
  const pods = (await admin.resourceList("k8s", "StaticPods.kubernetes.talos.dev")) as { resource?: WireResource }[];
  assert.deepEqual(
    pods.flatMap((p) => (p.resource ? [p.resource.metadata.id] : [])),
    [],
  );
  const status = await getResource("k8s", "StaticPodServerStatuses.kubernetes.talos.dev", "static-pod-server-status");
  const url = /^url: (http:\/\/127\.0\.0\.1:\d+)\n$/.exec(status.spec.yaml_spec)?.[1];
  assert.ok(url, status.spec.yaml_spec);
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "kind: PodList\nitems: []\napiversion: v1\n");
});
