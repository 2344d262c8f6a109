import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ProcessRunner } from "../../../agent/src/services/process-runner.js";
import { Supervisor } from "../../../agent/src/services/supervisor.js";
import type { Cgroups } from "../../../agent/src/sys/cgroups.js";

test("stop() after a start that failed its readiness (the child SIGKILLed and reaped) resolves instead of waiting for an exit already seen", {
  timeout: 60_000,
}, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-process-runner-"));
  const pidFile = path.join(dir, "pid");
  let pid = 0;
  const runner = new ProcessRunner({
    id: "never-ready",
    command: "/bin/sh",
    args: ["-c", `echo $$ > ${pidFile}; exec sleep 600`],
    stopTimeoutMs: 100,
    ready: async () => {
      while (!(fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").endsWith("\n"))) await sleep(10);
      pid = Number(fs.readFileSync(pidFile, "utf8"));
      throw new Error("not ready");
    },
  });
  try {
    await assert.rejects(
      runner.start(() => assert.fail("a failed start reports no exit")),
      /not ready/,
    );
    // Reaped: its /proc entry is gone once Node has waited for it (and emitted its exit).
    while (fs.existsSync(`/proc/${pid}`)) await sleep(10);
    await new Promise((r) => setImmediate(r));
    await runner.stop();
    assert.equal(runner.pid, undefined);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// As Talos's supervisor (service_runner.go, restart.go, process.go): a program that cannot be started or
// that exits before it is ready never reaches Running; its event carries Go's os/exec words.
const eventsOf = (sup: Supervisor, id: string) => sup.get(id)!.events.map((e) => [e.state, e.msg]);
const startEvents = [
  ["Starting", "Starting service"],
  ["Preparing", "Running pre state"],
  ["Preparing", "Creating service runner"],
];
const noCgroups: Cgroups = { setup: () => undefined, place: () => assert.fail("no process to place") };

function untilEvent(sup: Supervisor, id: string, state: string): Promise<void> {
  return new Promise((resolve) => {
    const off = sup.onChange((s, e) => {
      if (s.id === id && e.state === state) {
        off();
        resolve();
      }
    });
  });
}

test("a missing program (restart=never) is Failed with Go's fork/exec error, never Running, nothing placed in a cgroup", async () => {
  const sup = new Supervisor({
    healthIntervalMs: 60_000,
    restartIntervalMs: 5000,
    slowStartNoticeMs: 30_000,
    cgroups: noCgroups,
  });
  await sup.start({
    id: "ghost",
    runner: new ProcessRunner({ id: "ghost", command: "/nonexistent/basalt-ghost", args: ["--flag"] }),
    restart: "never",
  });
  assert.equal(sup.get("ghost")!.state, "Failed");
  assert.deepEqual(eventsOf(sup, "ghost"), [
    ...startEvents,
    [
      "Failed",
      "Failed running service: error running service: error starting process: fork/exec /nonexistent/basalt-ghost: no such file or directory",
    ],
  ]);
});

test("a missing program (restart=always) is Waiting with Talos's restart message, and each retry fails the same way", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const sup = new Supervisor({
    healthIntervalMs: 60_000,
    restartIntervalMs: 5000,
    slowStartNoticeMs: 30_000,
    cgroups: noCgroups,
  });
  const runner = new ProcessRunner({ id: "ghost", command: "/nonexistent/basalt-ghost", args: ["--flag", "a b"] });
  await sup.start({ id: "ghost", runner, restart: "always" });
  const waiting =
    'Error running Process(["/nonexistent/basalt-ghost" "--flag" "a b"]), going to restart forever: error starting process: fork/exec /nonexistent/basalt-ghost: no such file or directory';
  assert.deepEqual(eventsOf(sup, "ghost"), [...startEvents, ["Waiting", waiting]]);
  const retried = untilEvent(sup, "ghost", "Waiting");
  t.mock.timers.tick(5000);
  await retried;
  assert.deepEqual(eventsOf(sup, "ghost"), [...startEvents, ["Waiting", waiting], ["Waiting", waiting]]);
  await sup.stop("ghost");
  assert.deepEqual(eventsOf(sup, "ghost").slice(-2), [
    ["Stopping", "Aborting restart sequence"],
    ["Finished", "Service finished successfully"],
  ]);
});

test("a program that is not executable, and a bare name not on PATH, fail to start with Go's words", async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-process-runner-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const plain = path.join(dir, "not-executable");
  fs.writeFileSync(plain, "#!/bin/sh\n", { mode: 0o644 });
  const sup = new Supervisor({
    healthIntervalMs: 60_000,
    restartIntervalMs: 5000,
    slowStartNoticeMs: 30_000,
    cgroups: noCgroups,
  });
  await sup.start({
    id: "plain",
    runner: new ProcessRunner({ id: "plain", command: plain, args: [] }),
    restart: "never",
  });
  assert.deepEqual(eventsOf(sup, "plain").at(-1), [
    "Failed",
    `Failed running service: error running service: error starting process: fork/exec ${plain}: permission denied`,
  ]);
  await sup.start({
    id: "bare",
    runner: new ProcessRunner({ id: "bare", command: "basalt-no-such-program", args: [], env: { PATH: dir } }),
    restart: "never",
  });
  assert.deepEqual(eventsOf(sup, "bare").at(-1), [
    "Failed",
    'Failed running service: error running service: error starting process: exec: "basalt-no-such-program": executable file not found in $PATH',
  ]);
});

test("a process that dies before it is ready is not Running: Failed with its exit status (never) or a signal's name; Waiting to restart (always)", async (t) => {
  const neverReady = () => new Promise<void>(() => undefined);
  const sup = new Supervisor({
    healthIntervalMs: 60_000,
    restartIntervalMs: 5000,
    slowStartNoticeMs: 30_000,
    cgroups: { setup: () => undefined, place: () => undefined },
  });
  t.after(() => sup.stopAll());
  await sup.start({
    id: "quitter",
    runner: new ProcessRunner({ id: "quitter", command: "/bin/sh", args: ["-c", "exit 3"], ready: neverReady }),
    restart: "never",
  });
  assert.deepEqual(eventsOf(sup, "quitter"), [
    ...startEvents,
    ["Failed", "Failed running service: error running service: exit status 3"],
  ]);
  await sup.start({
    id: "killed",
    runner: new ProcessRunner({ id: "killed", command: "/bin/sh", args: ["-c", "kill -9 $$"], ready: neverReady }),
    restart: "never",
  });
  assert.deepEqual(eventsOf(sup, "killed").at(-1), [
    "Failed",
    "Failed running service: error running service: signal: killed",
  ]);
  await sup.start({
    id: "again",
    runner: new ProcessRunner({ id: "again", command: "/bin/sh", args: ["-c", "exit 1"], ready: neverReady }),
    restart: "always",
  });
  assert.deepEqual(eventsOf(sup, "again"), [
    ...startEvents,
    ["Waiting", 'Error running Process(["/bin/sh" "-c" "exit 1"]), going to restart forever: exit status 1'],
  ]);
});
