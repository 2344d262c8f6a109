import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineStatusController } from "../../../../agent/src/controllers/runtime/machine-status.js";
import { MetaKeysController } from "../../../../agent/src/controllers/runtime/meta-keys.js";
import { MountStatusController } from "../../../../agent/src/controllers/runtime/mount-status.js";
import { ServiceController } from "../../../../agent/src/controllers/runtime/service.js";
import { CONFIG_NAMESPACE, MachineTypeId, MachineTypeType } from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  NetworkStatusId,
  NetworkStatusType,
} from "../../../../agent/src/resources/catalog/network.js";
import {
  MachineStatusId,
  MachineStatusType,
  MetaKeyType,
  MountStatusType,
  RUNTIME_NAMESPACE,
  ServiceType,
  TimeStatusType,
  type MachineStage,
  type MachineStatusSpec,
} from "../../../../agent/src/resources/catalog/runtime.js";
import { K8S_NAMESPACE, StaticPodStatusType } from "../../../../agent/src/resources/catalog/k8s-controlplane.js";
import { ControllerRuntime, type Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { Supervisor } from "../../../../agent/src/services/supervisor.js";
import type { MountedVolume } from "../../../../agent/src/storage/volumes.js";

function harness(t: { after(fn: () => void): void }, ...controllers: Controller[]) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  for (const c of controllers) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { state, runtime };
}

test("MachineStatus: the stage machined reports, ready only when Talos's booting/running checks pass, unmet conditions named as Talos names them", async (t) => {
  const stage = new Observed<MachineStage>("booting");
  const { state, runtime } = harness(
    t,
    new MachineStatusController(stage, (type) =>
      type === "controlplane" ? ["apid", "machined", "trustd"] : ["apid", "machined"],
    ),
  );
  const status = () => state.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)!.spec;
  await runtime.whenIdle();
  assert.equal(status().stage, "booting");
  assert.equal(status().status.ready, false);
  assert.deepEqual(status().status.unmetConditions, [
    { name: "network", reason: `resource ${NetworkStatusType}(network/status) doesn't exist` },
    { name: "services", reason: "apid not running, machined not running" },
  ]);

  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: false,
    etcFilesReady: false,
  }));
  state.modify(RUNTIME_NAMESPACE, ServiceType, "machined", "test", () => ({
    running: true,
    healthy: true,
    unknown: false,
  }));
  state.modify(RUNTIME_NAMESPACE, ServiceType, "apid", "test", () => ({
    running: true,
    healthy: false,
    unknown: false,
  }));
  state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test", () => ({
    synced: false,
    epoch: 0,
    syncDisabled: false,
  }));
  await runtime.whenIdle();
  assert.deepEqual(status().status.unmetConditions, [
    { name: "time", reason: "time is not synced" },
    { name: "network", reason: "waiting on: etc-files, hostname" },
    { name: "services", reason: "apid not healthy" },
  ]);

  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  }));
  state.modify(RUNTIME_NAMESPACE, ServiceType, "apid", "test", () => ({
    running: true,
    healthy: true,
    unknown: false,
  }));
  state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test", () => ({
    synced: true,
    epoch: 0,
    syncDisabled: false,
  }));
  await runtime.whenIdle();
  assert.deepEqual(status().status, { ready: true, unmetConditions: [] });

  // A control plane needs trustd too.
  state.modify(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId, "test", () => "controlplane");
  stage.set("running");
  await runtime.whenIdle();
  assert.equal(status().stage, "running");
  assert.deepEqual(status().status.unmetConditions, [{ name: "services", reason: "trustd not running" }]);

  // Stages without checks are ready whatever the node's state (as Talos).
  stage.set("rebooting");
  await runtime.whenIdle();
  assert.deepEqual(status(), { stage: "rebooting", status: { ready: true, unmetConditions: [] } });
});

test("MachineStatus: static pods pending, failed, unknown or running unready are unmet; succeeded ones and a ready pod are not", async (t) => {
  const stage = new Observed<MachineStage>("running");
  const { state, runtime } = harness(t, new MachineStatusController(stage, () => []));
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  }));
  const pod = (id: string, podStatus: object) =>
    state.modify(K8S_NAMESPACE, StaticPodStatusType, id, "test", () => ({ podStatus }));
  const ready = (status: "True" | "False") => ({
    phase: "Running",
    conditions: [
      { type: "Initialized", status: "True" },
      { type: "Ready", status },
    ],
  });
  pod("kube-system/kube-apiserver-cp", ready("False"));
  pod("kube-system/kube-controller-manager-cp", { phase: "Pending" });
  pod("kube-system/kube-scheduler-cp", { phase: "Failed" });
  pod("kube-system/one-shot-cp", { phase: "Succeeded" });
  pod("kube-system/lost-cp", { phase: "Unknown" });
  await runtime.whenIdle();
  const status = () => state.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)!.spec.status;
  assert.deepEqual(status().unmetConditions, [
    {
      name: "staticPods",
      reason:
        "kube-system/kube-apiserver-cp not ready, kube-system/kube-controller-manager-cp pending, kube-system/kube-scheduler-cp failed, kube-system/lost-cp unknown",
    },
  ]);
  pod("kube-system/kube-apiserver-cp", ready("True"));
  for (const id of ["kube-controller-manager-cp", "kube-scheduler-cp", "lost-cp"])
    pod(`kube-system/${id}`, ready("True"));
  await runtime.whenIdle();
  assert.deepEqual(status(), { ready: true, unmetConditions: [] });
});

test("Service resources mirror the supervisor, MountStatus the mounted volumes, MetaKeys META's keys; gone ones are removed", async (t) => {
  const supervisor = new Supervisor({ healthIntervalMs: 60_000 });
  supervisor.registerSelf("machined");
  const volumes = new Observed<ReadonlyMap<string, MountedVolume>>(new Map());
  const keys = new Observed<ReadonlyMap<number, string>>(new Map([[0x0a, "v1"]]));
  const { state, runtime } = harness(
    t,
    new ServiceController({ list: () => supervisor.list(), onChange: (l) => supervisor.onChange(l) }),
    new MountStatusController(volumes),
    new MetaKeysController(keys),
  );
  await runtime.whenIdle();
  assert.deepEqual(state.get(RUNTIME_NAMESPACE, ServiceType, "machined")?.spec, {
    running: true,
    healthy: true,
    unknown: false,
  });
  assert.equal(state.get(RUNTIME_NAMESPACE, ServiceType, "machined")?.metadata.owner, "v1alpha1.ServiceController");
  assert.deepEqual(state.get(RUNTIME_NAMESPACE, MetaKeyType, "0x0a")?.spec, { value: "v1" });

  await supervisor.start({
    id: "apid",
    runner: { start: async () => undefined, stop: async () => undefined },
    restart: "never",
  });
  const state1: MountedVolume = {
    name: "STATE",
    source: "/dev/vda5",
    target: "/system/state",
    fstype: "xfs",
    formatted: false,
  };
  volumes.set(new Map([["STATE", state1]]));
  keys.set(new Map([[0x0b, "v2"]]));
  await runtime.whenIdle();
  assert.equal(state.get(RUNTIME_NAMESPACE, ServiceType, "apid")?.spec && true, true);
  assert.deepEqual(state.get(RUNTIME_NAMESPACE, MountStatusType, "STATE")?.spec, {
    source: "/dev/vda5",
    target: "/system/state",
    filesystemType: "xfs",
    encrypted: false,
  });
  assert.equal(state.get(RUNTIME_NAMESPACE, MetaKeyType, "0x0a"), undefined);
  assert.deepEqual(state.get(RUNTIME_NAMESPACE, MetaKeyType, "0x0b")?.spec, { value: "v2" });

  await supervisor.stop("apid");
  volumes.set(new Map());
  await runtime.whenIdle();
  assert.deepEqual(state.get(RUNTIME_NAMESPACE, ServiceType, "apid")?.spec, {
    running: false,
    healthy: true,
    unknown: false,
  });
  assert.equal(state.get(RUNTIME_NAMESPACE, MountStatusType, "STATE"), undefined);
});
