// The health checks' reader of this node, and the admin credentials minted for them
// and for the manifest apply.

import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import { loadConfig } from "../../../agent/src/config/index.js";
import { adminAccess, adminCredentials } from "../../../agent/src/controllers/k8s/admin-access.js";
import { localNodeReader, NodeUnreachableError } from "../../../agent/src/machined/health/local-node.js";
import { MachineStatusId, MachineStatusType, MountStatusType, RUNTIME_NAMESPACE } from "../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { generateSelfSignedCA } from "../../../agent/src/pki/index.js";
import type { ServiceStatus } from "../../../agent/src/services/service.js";

test("this node's reader: its services, stage and static pods; any other node is unreachable", async () => {
  const state = new ResourceState();
  state.modify(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, "test", () => ({ stage: "running", status: { ready: true, unmetConditions: [] } }));
  state.modify("k8s", "StaticPodStatuses.kubernetes.talos.dev", "kube-system/kube-apiserver-cp1", "test", () => ({}));
  state.modify(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL", "test", () => ({ source: "/dev/nonexistent6", target: "/var", filesystemType: "xfs", encrypted: false }));
  const etcd = { id: "etcd", state: "Running", events: [{ state: "Running", msg: "Health check successful", ts: new Date() }], health: { healthy: true, unknown: false } } as unknown as ServiceStatus; // only the fields the reader reads
  const reader = localNodeReader({ state, services: () => [etcd], platformMode: () => "metal", addresses: () => ["10.5.0.2"] });
  const signal = new AbortController().signal;
  assert.deepEqual(await reader.service("10.5.0.2", "etcd", signal), { hostname: "10.5.0.2", events: [{ state: "Running", msg: "Health check successful" }], healthy: true });
  assert.equal(await reader.service("10.5.0.2", "kubelet", signal), undefined);
  assert.equal(await reader.machineStage("10.5.0.2", signal), "running");
  assert.deepEqual(await reader.staticPodIds("10.5.0.2", signal), ["kube-system/kube-apiserver-cp1"]);
  assert.deepEqual(await reader.ephemeral("10.5.0.2", signal), { source: "/dev/nonexistent6", sizeBytes: undefined });
  assert.ok((await reader.memoryTotalKiB("10.5.0.2", signal)) > 0);
  await assert.rejects(reader.platformMode("10.5.0.3", signal), NodeUnreachableError);
  await assert.rejects(reader.etcdMembers("10.5.0.2", signal), /etcd member list is not available/);
});

test("admin credentials: O=system:masters CN=admin, signed by the cluster CA, for localhost's API server port; reused while valid", async () => {
  const ca = await generateSelfSignedCA({ commonName: "kubernetes", algorithm: "ecdsa-p256" });
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const config = loadConfig(`version: v1alpha1
machine:
  type: controlplane
cluster:
  controlPlane:
    endpoint: https://10.5.0.2:6443
    localAPIServerPort: 7443
  ca:
    crt: ${b64(ca.certPem)}
    key: ${b64(ca.keyPem)}
`);
  const creds = (await adminCredentials(config))!;
  assert.equal(creds.server, "https://localhost:7443");
  assert.equal(creds.ca, ca.certPem);
  const cert = new X509Certificate(creds.cert);
  assert.equal(cert.subject, "O=system:masters\nCN=admin");
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  const access = adminAccess(() => config);
  assert.equal(await access(), await access());
  assert.equal(await adminCredentials(loadConfig("version: v1alpha1\nmachine:\n  type: worker\n")), undefined);
});
