import assert from "node:assert/strict";
import { test } from "node:test";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/index.js";
import { machinedControllers, Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { MachineTypeController } from "../../../../agent/src/controllers/config/machine-type.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
} from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { networkDefinitions } from "../../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { Supervisor } from "../../../../agent/src/services/supervisor.js";

const config = (type: string) =>
  loadConfig(
    `version: v1alpha1\nmachine:\n  type: ${type}\ncluster:\n  controlPlane:\n    endpoint: https://10.0.0.1:6443\n`,
  );

test("MachineConfig holds the bundle machined runs with; MachineType reads it (join and empty read as worker); no config, neither", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, []);
  const active = new Observed<ConfigBundle | undefined>(undefined);
  const runtime = new ControllerRuntime(state);
  runtime.register(new MachineConfigController(active));
  runtime.register(new MachineTypeController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const machineType = () => state.get(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;

  await runtime.whenIdle();
  assert.equal(state.get(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active), undefined);

  for (const [written, read] of [
    ["controlplane", "controlplane"],
    ["join", "worker"],
    ['""', "worker"],
    ["init", "init"],
  ] as const) {
    const bundle = config(written);
    active.set(bundle);
    await runtime.whenIdle();
    const res = state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)!;
    assert.equal(res.spec, bundle, "the resource holds the parsed bundle itself");
    assert.equal(res.metadata.owner, "config.MachineConfigController");
    assert.equal(machineType(), read, `machine.type ${written}`);
  }

  active.set(undefined);
  await runtime.whenIdle();
  assert.equal(state.get(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active), undefined);
  assert.equal(machineType(), undefined);
});

test("the one registration list registers into one runtime: every output type has one writer", () => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const supervisor = new Supervisor({ healthIntervalMs: 60_000 });
  const list = machinedControllers({
    sources: {
      activeConfig: new Observed(undefined),
      stage: new Observed("booting" as const),
      volumes: new Observed(new Map()),
      metaKeys: new Observed(new Map()),
      platformMetadata: new Observed(undefined),
      platformNetwork: new Observed(undefined),
      services: { list: () => supervisor.list(), onChange: (l) => supervisor.onChange(l) },
      requiredServices: () => ["apid", "machined"],
    },
    secrets: {
      fallback: () => ({ addresses: [], hostname: "h", fqdn: "h" }),
      maintenanceListenAddresses: [],
      callTrustd: async () => {
        throw new Error("unused");
      },
    },
    network: [],
    kernelParams: {
      params: { read: async () => "", write: async () => undefined, remove: async () => undefined },
      container: false,
    },
    kernelModules: { load: async () => undefined },
    smbios: { read: async () => undefined },
    udevd: true,
    nodeIdentity: { stateDir: "/nonexistent", container: false, writeMachineId: async () => undefined },
    seccompProfilesDirectory: "/nonexistent",
  });
  for (const c of list) runtime.register(c);
  const names = list.map((c) => c.name);
  for (const n of [
    "config.MachineConfigController",
    "config.MachineTypeController",
    "runtime.MachineStatusController",
    "v1alpha1.ServiceController",
    "runtime.MountStatusController",
    "runtime.MetaKeysController",
    "secrets.APIController",
    "runtime.KernelParamConfigController",
    "runtime.KernelParamDefaultsController",
    "runtime.KernelParamSpecController",
    "hardware.SystemInfoController",
    "runtime.DevicesStatusController",
    "cluster.NodeIdentityController",
    "cri.SeccompProfileController",
    "cri.SeccompProfileFileController",
  ]) {
    assert.ok(names.includes(n), n);
  }
  const writers = runtime.dependencies().filter((e) => e.edgeType === "outputExclusive");
  assert.equal(new Set(writers.map((e) => e.type)).size, writers.length);
});
