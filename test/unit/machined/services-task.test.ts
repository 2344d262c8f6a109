import assert from "node:assert/strict";
import { test } from "node:test";
import type { MachineRuntime } from "../../../agent/src/machined/runtime.js";
import { startAllServices, stopAllServices } from "../../../agent/src/machined/tasks/services.js";
import type { ServiceDefinition } from "../../../agent/src/services/service.js";
import { Supervisor } from "../../../agent/src/services/supervisor.js";

test("startAllServices starts the node's services that do not run yet, without waiting for those still waiting; stopAllServices stops them", async () => {
  const supervisor = new Supervisor({ healthIntervalMs: 60_000 });
  const starts: string[] = [];
  const def = (id: string, gate?: Promise<void>): ServiceDefinition => ({
    id,
    runner: { start: async () => void starts.push(id), stop: async () => undefined },
    restart: "never",
    ...(gate ? { conditions: [{ description: "a gate", wait: () => gate }] } : {}),
  });
  await supervisor.start(def("apid"));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const r = {
    supervisor,
    services: () => [def("apid"), def("trustd", gate)],
    platformEvent: () => undefined,
  } as unknown as MachineRuntime;
  await startAllServices(r);
  assert.deepEqual(starts, ["apid"], "apid already ran; trustd waits for its condition");
  assert.equal(supervisor.get("trustd")?.state, "Waiting");
  open();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(starts, ["apid", "trustd"]);
  assert.equal(supervisor.get("trustd")?.state, "Running");
  await stopAllServices(r);
  assert.deepEqual(
    supervisor.list().map((s) => s.state),
    ["Finished", "Finished"],
  );
});
