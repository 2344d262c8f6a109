import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import {
  networkDefinitions,
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
} from "../../../agent/src/resources/catalog/network.js";
import {
  SECRETS_NAMESPACE,
  ApiCertificatesType,
  ApiCertificatesId,
} from "../../../agent/src/resources/catalog/secrets.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { allOf, networkReady, pathExists, resourceExists, timeSynced } from "../../../agent/src/services/conditions.js";
import type { Condition, ServiceRunner } from "../../../agent/src/services/service.js";
import { Supervisor } from "../../../agent/src/services/supervisor.js";

function runner(log: string[], id: string): ServiceRunner {
  return { start: async () => void log.push(`start ${id}`), stop: async () => void log.push(`stop ${id}`) };
}

/** A condition the test makes hold. */
function gate(): Condition & { open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    description: "the gate",
    open,
    wait: (signal) =>
      Promise.race([
        opened,
        new Promise<never>((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
        ),
      ]),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test("a service waits (state Waiting, Talos's wording) until its dependencies run and its conditions hold", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const log: string[] = [];
  const g = gate();
  const apid = sup.start({
    id: "apid",
    dependsOn: ["containerd"],
    conditions: [g],
    runner: runner(log, "apid"),
    restart: "never",
  });
  await tick();
  assert.equal(sup.get("apid")?.state, "Waiting");
  assert.equal(sup.get("apid")?.events.at(-1)?.msg, 'Waiting for service "containerd" to be "up", the gate');
  await sup.start({ id: "containerd", runner: runner(log, "containerd"), restart: "never" });
  await tick();
  assert.equal(sup.get("apid")?.state, "Waiting", "the condition does not hold yet");
  g.open();
  await apid;
  assert.equal(sup.get("apid")?.state, "Running");
  assert.deepEqual(log, ["start containerd", "start apid"]);
  assert.deepEqual(
    sup
      .get("apid")
      ?.events.filter((e) => e.state === "Waiting")
      .map((e) => e.msg),
    ['Waiting for service "containerd" to be "up", the gate', "Waiting for the gate"],
    "once containerd is up, the event names what is still awaited (as Talos)",
  );
});

test("a dependency is up once Running and healthy (Talos's StateEventUp), or once Finished", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  const sup = new Supervisor({ healthIntervalMs: 1000 });
  const log: string[] = [];
  let serving = false;
  const health = async () => {
    if (!serving) throw new Error("not serving");
  };
  await sup.start({ id: "containerd", runner: { ...runner(log, "containerd"), health }, restart: "never" });
  const ext = sup.start({
    id: "ext-hello",
    dependsOn: ["containerd"],
    runner: runner(log, "ext-hello"),
    restart: "never",
  });
  await tick();
  assert.deepEqual(
    [sup.get("containerd")?.state, sup.get("ext-hello")?.state],
    ["Running", "Waiting"],
    "Running but unhealthy is not up",
  );
  serving = true;
  t.mock.timers.tick(1000);
  await ext;
  assert.deepEqual([sup.get("ext-hello")?.state, log], ["Running", ["start containerd", "start ext-hello"]]);
  await sup.start({ id: "once", runner: runner(log, "once"), restart: "never" });
  await sup.stop("once");
  await sup.start({ id: "after-once", dependsOn: ["once"], runner: runner(log, "after-once"), restart: "never" });
  assert.equal(sup.get("after-once")?.state, "Running", "a Finished dependency is up");
  await sup.stopAll();
});

test("stopAll stops dependents before what they depend on; pre runs before the start, post after the stop", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const log: string[] = [];
  await sup.start({ id: "containerd", runner: runner(log, "containerd"), restart: "never" });
  await sup.start({
    id: "apid",
    dependsOn: ["containerd"],
    runner: runner(log, "apid"),
    restart: "never",
    pre: async () => void log.push("pre apid"),
    post: async () => void log.push("post apid"),
  });
  await sup.start({ id: "udevd", runner: runner(log, "udevd"), restart: "never" });
  // Latest first (udevd), except that containerd waits for apid, which depends on it.
  await sup.stopAll();
  assert.deepEqual(log, [
    "start containerd",
    "pre apid",
    "start apid",
    "start udevd",
    "stop udevd",
    "stop apid",
    "post apid",
    "stop containerd",
  ]);
});

test("a service stopped while it waits never starts: Failed with Talos's canceled condition", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const log: string[] = [];
  const starting = sup.start({ id: "apid", conditions: [gate()], runner: runner(log, "apid"), restart: "always" });
  await tick();
  await sup.stop("apid");
  await starting;
  assert.deepEqual(
    sup.get("apid")?.events.map((e) => [e.state, e.msg]),
    [
      ["Starting", "Starting service"],
      ["Waiting", "Waiting for the gate"],
      ["Failed", "Condition failed: context canceled"],
    ],
  );
  assert.deepEqual(log, []);
});

test("a condition that fails ends the service Failed with Talos's text, whatever its policy: no retry, no pre, no post, the other waits end", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  for (const restart of ["always", "untilSuccess", "never"] as const) {
    const sup = new Supervisor({ healthIntervalMs: 60_000 });
    const log: string[] = [];
    const other = gate();
    let otherAborted = false;
    const failing: Condition = {
      description: 'file "/x" to exist',
      wait: async () => {
        throw new Error("stat /x: permission denied");
      },
    };
    const watched: Condition = {
      description: other.description,
      wait: (signal) => {
        signal.addEventListener("abort", () => (otherAborted = true));
        return other.wait(signal);
      },
    };
    await sup.start({
      id: "svc",
      conditions: [watched, failing],
      runner: runner(log, "svc"),
      restart,
      pre: async () => void log.push("pre"),
      post: async () => void log.push("post"),
    });
    assert.deepEqual(
      sup.get("svc")?.events.map((e) => [e.state, e.msg]),
      [
        ["Starting", "Starting service"],
        ["Waiting", 'Waiting for the gate, file "/x" to exist'],
        ["Failed", "Condition failed: stat /x: permission denied"],
      ],
      restart,
    );
    assert.equal(otherAborted, true, "the wait that had not ended is ended");
    t.mock.timers.tick(120_000);
    await tick();
    assert.deepEqual([log, sup.get("svc")?.state], [[], "Failed"], restart);
  }
});

test("conditions: resourceExists (with a predicate), networkReady, timeSynced, pathExists, allOf", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const ac = new AbortController();
  t.after(() => ac.abort());
  const held = (c: Condition) => {
    let done = false;
    c.wait(ac.signal).then(
      () => (done = true),
      () => undefined,
    );
    return () => done;
  };
  const cert = held(resourceExists(state, SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId));
  const net = held(networkReady(state, "address", "hostname"));
  const time = held(timeSynced(state));
  await tick();
  assert.deepEqual([cert(), net(), time()], [false, false, false]);
  state.modify(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId, "test", () => ({}) as never);
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: false,
    hostnameReady: false,
    etcFilesReady: false,
  }));
  await tick();
  assert.deepEqual([cert(), net(), time()], [true, false, false]);
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: false,
    hostnameReady: true,
    etcFilesReady: false,
  }));
  state.modify("runtime", "TimeStatuses.v1alpha1.talos.dev", "node", "test", () => ({
    synced: true,
    epoch: 0,
    syncDisabled: false,
  }));
  await tick();
  assert.deepEqual([cert(), net(), time()], [true, true, true]);

  const dir = await mkdtemp(path.join(tmpdir(), "cond-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, "ready");
  const both = allOf(pathExists(file, 10), timeSynced(state));
  assert.equal(both.description, `path ${file} to exist, time sync`);
  const bothHeld = held(both);
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(bothHeld(), false);
  await writeFile(file, "");
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(bothHeld(), true);

  const stop = new AbortController();
  const pending = resourceExists(state, "x", ApiCertificatesType, "nope").wait(stop.signal);
  stop.abort(new Error("stopped"));
  await assert.rejects(pending, /stopped/);
});
