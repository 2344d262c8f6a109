// The platform events of the sequences' tasks at Talos's moments: services starting, an install,
// a staged upgrade that fails, and every reboot or kexec, announced once and only briefly awaited.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { platformEvents } from "../../../../agent/src/machined/platform-events.js";
import type { PlatformEvent } from "../../../../agent/src/machined/platforms/platform.js";
import type { MachineRuntime } from "../../../../agent/src/machined/runtime.js";
import { install } from "../../../../agent/src/machined/tasks/install.js";
import { kexecInstalled, reboot } from "../../../../agent/src/machined/tasks/power.js";
import { startAllServices } from "../../../../agent/src/machined/tasks/services.js";
import { upgradeRequests } from "../../../../agent/src/machined/tasks/upgrade-requests.js";
import { MetaTag } from "../../../../agent/src/storage/meta.js";
import { pathsAt } from "../../../../agent/src/sys/paths.js";

const rebooted = "talos.prov.host.rebooted: Talos rebooted.";

/** A metal node's runtime that records its events, the waits for them and its power actions, in order. */
function recording(t: { after(fn: () => void): void }, fields: Record<string, unknown> = {}) {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-sequence-events-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const steps: string[] = [];
  const record = (e: PlatformEvent) =>
    steps.push(`${e.type}: ${e.message}${e.error === undefined ? "" : ` (${e.error})`}`);
  const fake = {
    paths: pathsAt(root),
    platform: { name: "equinixMetal", mode: "metal" },
    cmdline: new Map<string, string[]>(),
    systemDisk: undefined,
    configText: undefined,
    power: {
      request: async (action: string) => void steps.push(`power ${action}`),
      kexec: async () => void steps.push("kexec"),
    },
    platformEvent: record,
    platformEventsSent: async (limitMs: number) => void steps.push(`wait ${limitMs} ms`),
    ...fields,
  };
  // The tasks under test read only these fields of the runtime.
  return { r: fake as unknown as MachineRuntime, steps };
}

test("a reboot announces itself once, waits for it at most 10 s, then reboots", async (t) => {
  const { r, steps } = recording(t);
  await reboot(r);
  assert.deepEqual(steps, [rebooted, "wait 10000 ms", "power reboot"]);
});

test("a kexec that falls back to the firmware (no BOOT) announces the reboot once", async (t) => {
  const { r, steps } = recording(t);
  await kexecInstalled(r);
  assert.deepEqual(steps, [rebooted, "wait 10000 ms", "power reboot"]);
});

test("services starting is the activation of a configured boot", async (t) => {
  const { r, steps } = recording(t, { services: () => [], supervisor: { get: () => undefined } });
  await startAllServices(r);
  assert.deepEqual(steps, ["activate: Talos is ready for user interaction."]);
});

test("an install that fails is a failure event with its error, and still fails", async (t) => {
  const { r, steps } = recording(t);
  await assert.rejects(install(r), /install needs a configuration/);
  assert.deepEqual(steps, ["failure: Talos install failed. (install needs a configuration)"]);
});

test("a staged upgrade whose installer cannot be pulled is a failure event; nothing reboots", async (t) => {
  const meta = new Map<number, string>([
    [MetaTag.stagedUpgradeImageRef, "127.0.0.1:1/installer:v2"],
    [MetaTag.stagedUpgradeInstallOptions, "{}"],
  ]);
  const { r, steps } = recording(t, {
    configText: "",
    meta: { get: (tag: number) => meta.get(tag), delete: async (tag: number) => void meta.delete(tag) },
    metaChanged: () => undefined,
    volumes: new Map(),
    setStage: (stage: string) => void steps.push(`stage ${stage}`),
  });
  const requests = upgradeRequests({
    runtime: r,
    // Stand-ins typed loosely: no sequence may run when the pull fails (a run would show as a step), and
    // the configuration's registries do not matter for an unreachable one.
    sequences: { run: async (name: string) => void steps.push(`sequence ${name}`) } as never,
    checker: { parse: () => undefined } as never,
    mode: () => "normal",
    activeConfig: () => undefined,
    reboot: () => void steps.push("reboot requested"),
    signal: new AbortController().signal,
  });
  assert.equal(await requests.runStaged(), false);
  assert.equal(steps.length, 1);
  assert.match(steps[0] ?? "", /^failure: Talos staged upgrade failed\. \(.*127\.0\.0\.1:1/);
  assert.equal(meta.size, 0, "the request is taken, so a failing staged upgrade cannot loop");
});

test("waiting for the events stops at its limit while an endpoint still retries", async () => {
  let sends = 0;
  const stuck = {
    name: "equinixMetal",
    sendEvent: () => (sends++, new Promise<void>(() => undefined)),
  };
  // A platform whose endpoint never answers; the io is only handed to it.
  const events = platformEvents(stuck as never, {} as never);
  events.fire({ type: "talos.prov.host.rebooted", message: "Talos rebooted." });
  const outcome = await Promise.race([
    events.drained(20).then(() => "drained"),
    new Promise((resolve) => setTimeout(resolve, 5_000, "still waiting")),
  ]);
  assert.equal(outcome, "drained");
  assert.equal(sends, 1);
});
