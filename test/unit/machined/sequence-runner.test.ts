import assert from "node:assert/strict";
import { test } from "node:test";
import { ConflictError } from "../../../agent/src/errors.js";
import { SequenceRunner } from "../../../agent/src/machined/sequence-runner.js";
import { SequenceAbortedError, type Phase } from "../../../agent/src/machined/sequencer.js";

/** One phase whose task runs until `release` (or forever). */
function blocking(log: string[], name: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const phases: Phase[] = [
    {
      name: "first",
      tasks: [
        {
          name: `${name}1`,
          run: async () => {
            log.push(`${name}1`);
            await released;
          },
        },
      ],
    },
    { name: "second", tasks: [{ name: `${name}2`, run: async () => void log.push(`${name}2`) }] },
  ];
  return { phases, release };
}

test("a reboot takes over a running boot: the boot stops before its next phase, the reboot runs under its actor id", async () => {
  const log: string[] = [];
  const actors: string[] = [];
  const runner = new SequenceRunner(
    (actor) => (ev) => void (ev.task && ev.action === "start" && actors.push(`${actor}:${ev.task}`)),
    new AbortController().signal,
    0,
  );
  const boot = blocking(log, "boot");
  const booting = runner.run("boot", boot.phases);
  await new Promise((r) => setImmediate(r));
  assert.equal(runner.lifecycleRequested, false);
  runner.request(
    "reboot",
    () => [{ name: "reboot", tasks: [{ name: "reboot", run: async () => void log.push("reboot") }] }],
    "actor-1",
  );
  assert.equal(runner.lifecycleRequested, true);
  // The reboot starts (after its reply grace) while the boot's task still runs.
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(log, ["boot1"], "the reboot waits for the boot's running task");
  boot.release();
  await assert.rejects(booting, SequenceAbortedError);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(log, ["boot1", "reboot"]);
  assert.deepEqual(actors, [":boot1", "actor-1:reboot"]);
});

test("a sequence that may not take over is refused with Conflict and nothing runs", async () => {
  const log: string[] = [];
  const runner = new SequenceRunner(() => () => undefined, new AbortController().signal, 0);
  const install = blocking(log, "install");
  const installing = runner.run("install", install.phases);
  await new Promise((r) => setImmediate(r));
  assert.throws(
    () => runner.request("reset", () => []),
    (err: unknown) => err instanceof ConflictError && /the install sequence is running/.test(err.message),
  );
  assert.equal(runner.lifecycleRequested, false);
  await assert.rejects(runner.run("boot", []), ConflictError);
  install.release();
  await installing;
  assert.deepEqual(log, ["install1", "install2"]);
});

test("machined stopping stops the running sequence", async () => {
  const stop = new AbortController();
  const runner = new SequenceRunner(() => () => undefined, stop.signal, 0);
  const log: string[] = [];
  const boot = blocking(log, "boot");
  const booting = runner.run("boot", boot.phases);
  await new Promise((r) => setImmediate(r));
  stop.abort();
  boot.release();
  await assert.rejects(booting, SequenceAbortedError);
  assert.deepEqual(log, ["boot1"]);
});

test("a lifecycle sequence whose phases cannot be built fails with a log line; the runner takes the next request", async () => {
  const log: string[] = [];
  const runner = new SequenceRunner(() => () => undefined, new AbortController().signal, 0);
  runner.request("reboot", () => {
    throw new Error("no system disk");
  });
  await new Promise((r) => setTimeout(r, 10));
  runner.request("reboot", () => [
    { name: "reboot", tasks: [{ name: "reboot", run: async () => void log.push("reboot") }] },
  ]);
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(log, ["reboot"]);
});
