// The health checks' reader of this node, and kubeconfigs read as Kubernetes client credentials.

import assert from "node:assert/strict";
import { test } from "node:test";
import { credentialsFromKubeconfig } from "../../../agent/src/controllers/k8s/kubeconfig-credentials.js";
import { localNodeReader, NodeUnreachableError } from "../../../agent/src/machined/health/local-node.js";
import {
  MachineStatusId,
  MachineStatusType,
  MountStatusType,
  RUNTIME_NAMESPACE,
} from "../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { renderKubeconfig } from "../../../agent/src/pki/index.js";
import type { ServiceStatus } from "../../../agent/src/services/service.js";

test("this node's reader: its services, stage and static pods; any other node is unreachable", async () => {
  const state = new ResourceState();
  state.modify(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, "test", () => ({
    stage: "running",
    status: { ready: true, unmetConditions: [] },
  }));
  state.modify("k8s", "StaticPodStatuses.kubernetes.talos.dev", "kube-system/kube-apiserver-cp1", "test", () => ({}));
  state.modify(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL", "test", () => ({
    source: "/dev/nonexistent6",
    target: "/var",
    filesystemType: "xfs",
    encrypted: false,
  }));
  const etcd = {
    id: "etcd",
    state: "Running",
    events: [{ state: "Running", msg: "Health check successful", ts: new Date() }],
    health: { healthy: true, unknown: false },
  } as unknown as ServiceStatus; // only the fields the reader reads
  const reader = localNodeReader({
    state,
    services: () => [etcd],
    platformMode: () => "metal",
    addresses: () => ["10.5.0.2"],
  });
  const signal = new AbortController().signal;
  assert.deepEqual(await reader.service("10.5.0.2", "etcd", signal), {
    hostname: "10.5.0.2",
    events: [{ state: "Running", msg: "Health check successful" }],
    healthy: true,
  });
  assert.equal(await reader.service("10.5.0.2", "kubelet", signal), undefined);
  assert.equal(await reader.machineStage("10.5.0.2", signal), "running");
  assert.deepEqual(await reader.staticPodIds("10.5.0.2", signal), ["kube-system/kube-apiserver-cp1"]);
  assert.deepEqual(await reader.ephemeral("10.5.0.2", signal), { source: "/dev/nonexistent6", sizeBytes: undefined });
  assert.ok((await reader.memoryTotalKiB("10.5.0.2", signal)) > 0);
  await assert.rejects(reader.platformMode("10.5.0.3", signal), NodeUnreachableError);
  await assert.rejects(reader.etcdMembers("10.5.0.2", signal), /etcd member list is not available/);
});

test("a kubeconfig as credentials: the current context's server, CA and client certificate; force_endpoint as Talos overrides it", () => {
  const text = renderKubeconfig({
    clusterName: "basalt",
    endpoint: "https://10.5.0.2:6443",
    caPem: "CA PEM\n",
    certPem: "CERT PEM\n",
    keyPem: "KEY PEM\n",
    username: "admin",
    contextName: "admin",
  });
  assert.deepEqual(credentialsFromKubeconfig(text), {
    server: "https://10.5.0.2:6443",
    ca: "CA PEM\n",
    cert: "CERT PEM\n",
    key: "KEY PEM\n",
  });
  assert.equal(credentialsFromKubeconfig(text, "10.5.0.9").server, "https://10.5.0.9:6443");
  assert.equal(credentialsFromKubeconfig(text, "https://cp.example.org:7443").server, "https://cp.example.org:7443");
  assert.equal(credentialsFromKubeconfig(text, "fd00::9").server, "https://[fd00::9]:6443");
  assert.throws(() => credentialsFromKubeconfig("apiVersion: v1\nkind: Config\n"), /no cluster or user/);
});
