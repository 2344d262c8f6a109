import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { KernelModuleConfigController } from "../../../../agent/src/controllers/runtime/kernel-module-config.js";
import { KernelModuleSpecController } from "../../../../agent/src/controllers/runtime/kernel-module-spec.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  KernelModuleSpecType,
  kernelModuleSpecDefinition,
} from "../../../../agent/src/resources/catalog/kernel-modules.js";
import { RUNTIME_NAMESPACE } from "../../../../agent/src/resources/catalog/runtime.js";
import { yamlSpec } from "../../../../agent/src/resources/definitions.js";
import { ControllerRuntime, type Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import type { KernelModules } from "../../../../agent/src/sys/kernel-modules.js";

function configWith(modules: string): ConfigBundle {
  return loadConfig(Buffer.from(`version: v1alpha1\nmachine:\n  type: worker\n  kernel:\n    modules:\n${modules}`));
}

/** A kernel that knows `known` modules and records every load, in order. */
class FakeModules implements KernelModules {
  readonly loads: string[] = [];
  constructor(private readonly known: Set<string>) {}
  async load(name: string, parameters: readonly string[]): Promise<void> {
    if (!this.known.has(name)) throw new Error(`modprobe: FATAL: Module ${name} not found`);
    this.loads.push([name, ...parameters].join(" "));
  }
}

test("modules from the config are specs and loaded with their parameters; a change loads again, a removal unloads nothing", async (t) => {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const kernel = new FakeModules(new Set(["br_netfilter", "drbd", "dummy"]));
  const active = new Observed<ConfigBundle | undefined>(
    configWith(
      "      - name: br_netfilter\n      - name: drbd\n        parameters: [usermode_helper=disabled, minor_count=8]\n",
    ),
  );
  for (const c of [
    new MachineConfigController(active),
    new KernelModuleConfigController(),
    new KernelModuleSpecController(kernel),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();

  assert.deepEqual(kernel.loads, ["br_netfilter", "drbd usermode_helper=disabled minor_count=8"]);
  const drbd = state.get(RUNTIME_NAMESPACE, KernelModuleSpecType, "drbd");
  assert.deepEqual(drbd?.spec, { name: "drbd", parameters: ["usermode_helper=disabled", "minor_count=8"] });
  assert.equal(
    yamlSpec(kernelModuleSpecDefinition, drbd!.spec as never),
    "string: drbd\nparameters:\n    - usermode_helper=disabled\n    - minor_count=8\n",
  );

  kernel.loads.length = 0;
  active.set(configWith("      - name: dummy\n        parameters: [numdummies=2]\n"));
  await runtime.whenIdle();
  assert.deepEqual(
    state.list(RUNTIME_NAMESPACE, KernelModuleSpecType).map((r) => r.metadata.id),
    ["dummy"],
  );
  assert.deepEqual(kernel.loads, ["dummy numdummies=2"]);
});

test("a module the kernel lacks fails the controller, and the others are still loaded", async (t) => {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const kernel = new FakeModules(new Set(["dummy"]));
  const active = new Observed<ConfigBundle | undefined>(
    configWith("      - name: nosuchmodule\n      - name: dummy\n"),
  );
  const spec = new KernelModuleSpecController(kernel);
  const failures: string[] = [];
  // The spec controller, with its failures seen.
  const observed: Controller = {
    name: spec.name,
    inputs: spec.inputs,
    outputs: spec.outputs,
    reconcile: (ctx) =>
      spec.reconcile(ctx).catch((err: Error) => {
        failures.push(err.message);
        throw err;
      }),
  };
  for (const c of [new MachineConfigController(active), new KernelModuleConfigController(), observed])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();
  assert.deepEqual(kernel.loads, ["dummy"]);
  assert.deepEqual(failures, ['error loading module "nosuchmodule": modprobe: FATAL: Module nosuchmodule not found']);
});
