import assert from "node:assert/strict";
import { test } from "node:test";
import { TimeSyncController } from "../../../agent/src/controllers/time/sync.js";
import { loadConfig } from "../../../agent/src/config/load.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  TimeServerStatusId,
  TimeServerStatusType,
} from "../../../agent/src/resources/catalog/network.js";
import {
  RUNTIME_NAMESPACE,
  TimeStatusType,
  type TimeStatusSpec,
} from "../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeClock } from "../../../agent/src/sys/clock-fake.js";

function harness(t: { after(fn: () => void): void }, controller: TimeSyncController) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  runtime.register(controller);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const status = () => state.get<TimeStatusSpec>(RUNTIME_NAMESPACE, TimeStatusType, "node")?.spec;
  const servers = (timeServers: string[]) =>
    state.modify(NETWORK_NAMESPACE, TimeServerStatusType, TimeServerStatusId, "test", () => ({ timeServers }));
  const config = (time: string) => {
    const text = `version: v1alpha1\nmachine:\n    type: worker\n    time:\n${time}cluster: {}\n`;
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
      loadConfig(Buffer.from(text)),
    );
  };
  const until = async (pred: (s: TimeStatusSpec | undefined) => boolean) => {
    while (!pred(status())) {
      await runtime.whenIdle();
      if (!pred(status())) await new Promise((r) => setTimeout(r, 5));
    }
  };
  return { state, runtime, status, servers, config, until };
}

const answering = (offsetMs: number) => ({
  query: async () => ({ offsetMs, rttMs: 1, leap: "none" as const, stratum: 2, serverTime: 0 }),
  minPollMs: 60_000,
});
const silent = { query: async (): Promise<never> => Promise.reject(new Error("no answer")), retryPollMs: 60_000 };

test("TimeStatus waits for TimeServerStatus, then is unsynced until the first adjustment, then synced", async (t) => {
  const clock = new FakeClock(-3000);
  const h = harness(t, new TimeSyncController({ clock, syncer: answering(3000) }));
  await h.runtime.whenIdle();
  assert.equal(h.status(), undefined);
  h.servers(["192.0.2.1"]);
  await h.until((s) => s?.synced === true);
  assert.deepEqual(h.status(), { synced: true, epoch: 0, syncDisabled: false });
  assert.deepEqual(clock.adjustments, [{ kind: "step", offsetMs: 3000, leap: "none" }]);
});

test("a step of more than 15 minutes is a new epoch", async (t) => {
  const h = harness(t, new TimeSyncController({ clock: new FakeClock(), syncer: answering(16 * 60_000) }));
  h.servers(["192.0.2.1"]);
  await h.until((s) => s?.epoch === 1);
  assert.deepEqual(h.status(), { synced: true, epoch: 1, syncDisabled: false });
});

test("no server answers: unsynced; .machine.time.bootTimeout past since boot counts as synced", async (t) => {
  const h = harness(
    t,
    new TimeSyncController({ clock: new FakeClock(), syncer: silent, bootTimeMs: Date.now() - 10_000 }),
  );
  h.servers(["192.0.2.1"]);
  await h.runtime.whenIdle();
  assert.deepEqual(h.status(), { synced: false, epoch: 0, syncDisabled: false });
  h.config("        bootTimeout: 5s\n");
  await h.until((s) => s?.synced === true);
  assert.deepEqual(h.status(), { synced: true, epoch: 0, syncDisabled: false });
});

test(".machine.time.disabled and a node without a clock to adjust: sync disabled, which counts as synced", async (t) => {
  const clock = new FakeClock();
  const h = harness(t, new TimeSyncController({ clock, syncer: silent }));
  h.servers(["192.0.2.1"]);
  h.config("        disabled: true\n");
  await h.until((s) => s?.syncDisabled === true);
  assert.deepEqual(h.status(), { synced: true, epoch: 0, syncDisabled: true });
  assert.deepEqual(clock.adjustments, []);

  const none = harness(t, new TimeSyncController());
  none.servers(["192.0.2.1"]);
  await none.until((s) => s !== undefined);
  assert.deepEqual(none.status(), { synced: true, epoch: 0, syncDisabled: true });
});
