import assert from "node:assert/strict";
import { test } from "node:test";
import { setLogFormat, setLogSink } from "../../../agent/src/log.js";
import type { Cgroups } from "../../../agent/src/sys/cgroups.js";
import { ProcessRunner } from "../../../agent/src/services/process-runner.js";
import { ServiceLogs } from "../../../agent/src/services/logs.js";
import type { RestartPolicy, ServiceEvent, ServiceRunner } from "../../../agent/src/services/service.js";
import { ServiceOperationError, Supervisor } from "../../../agent/src/services/supervisor.js";

function fakeRunner() {
  let exit: ((err: Error | undefined) => void) | undefined;
  const runner: ServiceRunner & { exit(err?: Error): void; starts: number; stops: number } = {
    starts: 0,
    stops: 0,
    async start(onExit) {
      runner.starts++;
      exit = onExit;
      return `Process started (run ${runner.starts})`;
    },
    async stop() {
      runner.stops++;
    },
    exit(err) {
      exit?.(err);
    },
  };
  return runner;
}

const settle = () => new Promise((r) => setImmediate(r));
const tail = (sup: Supervisor, id: string, n: number) =>
  sup
    .get(id)!
    .events.slice(-n)
    .map((e) => [e.state, e.msg]);

async function started(policy: RestartPolicy) {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const runner = fakeRunner();
  await sup.start({ id: "svc", runner, restart: policy });
  return { sup, runner };
}

test("restart=never: a failed run is Failed, a clean exit Finished, and neither is restarted", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const failing = await started("never");
  failing.runner.exit(new Error("exit status 1"));
  assert.deepEqual(tail(failing.sup, "svc", 1), [
    ["Failed", "Failed running service: error running service: exit status 1"],
  ]);
  const clean = await started("never");
  clean.runner.exit();
  assert.deepEqual(tail(clean.sup, "svc", 1), [["Finished", "Service finished successfully"]]);
  t.mock.timers.tick(120_000);
  await settle();
  assert.deepEqual([failing.runner.starts, clean.runner.starts], [1, 1]);
});

test("restart=untilSuccess: a failure restarts (straight to Running, as Talos's restarter); a clean exit finishes", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const { sup, runner } = await started("untilSuccess");
  runner.exit(new Error("exit status 2"));
  assert.deepEqual(tail(sup, "svc", 1), [
    ["Waiting", "Error running svc, going to restart until it succeeds: exit status 2"],
  ]);
  t.mock.timers.tick(5000);
  await settle();
  assert.deepEqual(tail(sup, "svc", 2), [
    ["Running", "Process started (run 2)"],
    ["Running", "Health check successful"],
  ]);
  runner.exit();
  assert.deepEqual(tail(sup, "svc", 1), [["Finished", "Service finished successfully"]]);
  t.mock.timers.tick(120_000);
  await settle();
  assert.equal(runner.starts, 2);
});

test("restart=always: a clean exit restarts too; every restart waits Talos's fixed 5 s, however many runs failed", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const logged: number[] = [];
  setLogFormat("json");
  const previous = setLogSink((line) => {
    const record = JSON.parse(line) as { msg: string; delayMs?: number };
    if (record.msg === "restarting service") logged.push(record.delayMs!);
  });
  t.after(() => setLogSink(previous));
  const { sup, runner } = await started("always");
  runner.exit();
  assert.deepEqual(tail(sup, "svc", 1), [["Waiting", "Runner svc exited without error, going to restart it"]]);
  for (let i = 0; i < 9; i++) {
    t.mock.timers.tick(4999);
    await settle();
    assert.equal(runner.starts, i + 1, "not restarted before 5 s");
    t.mock.timers.tick(1);
    await settle();
    assert.equal(runner.starts, i + 2, "restarted at 5 s");
    assert.equal(sup.get("svc")!.state, "Running");
    runner.exit(new Error("boom"));
  }
  assert.deepEqual(tail(sup, "svc", 1), [["Waiting", "Error running svc, going to restart forever: boom"]]);
  assert.deepEqual(logged, Array(10).fill(5000), "the log line names the interval");
  assert.equal(runner.starts, 10);
  await sup.stop("svc");
  assert.deepEqual(tail(sup, "svc", 2), [
    ["Stopping", "Aborting restart sequence"],
    ["Finished", "Service finished successfully"],
  ]);
});

test("ServiceStart/Stop/Restart follow Talos: unknown ids and operations a service does not allow are refused", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const open = fakeRunner();
  const closed = fakeRunner();
  await sup.start({ id: "ext", runner: open, restart: "always", api: { start: true, stop: true, restart: true } });
  await sup.start({ id: "apid", runner: closed, restart: "always" });
  assert.throws(
    () => sup.apiStart("nope"),
    (e: Error) => e instanceof ServiceOperationError && e.message === 'service "nope" not defined',
  );
  await assert.rejects(sup.apiStop("apid"), { message: 'service "apid" doesn\'t support stop operation via API' });
  await assert.rejects(sup.apiRestart("apid"), {
    message: 'service "apid" doesn\'t support restart operation via API',
  });
  sup.apiStart("apid"); // running already: nothing to do, no error (as Talos)

  await sup.apiStop("ext");
  assert.equal(sup.get("ext")!.state, "Finished");
  await sup.apiStop("ext"); // stopped already: nothing to do
  sup.apiStart("ext");
  await settle();
  assert.equal(sup.get("ext")!.state, "Running");
  await sup.apiRestart("ext");
  await settle();
  assert.equal(sup.get("ext")!.state, "Running");
  assert.deepEqual([open.starts, open.stops], [3, 2]);
  assert.deepEqual(
    sup
      .get("ext")!
      .events.filter((e) => e.state === "Starting" || e.state === "Finished")
      .map((e) => e.state),
    ["Starting", "Finished", "Starting", "Finished", "Starting"],
  );
  await sup.stopAll();
});

test("listeners get every event in order, state changes and health changes alike; machined's own entry reads as Talos's", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const seen: [string, string, string][] = [];
  sup.onChange((status, e: ServiceEvent) => seen.push([status.id, e.state, e.msg]));
  sup.registerSelf("machined", async () => undefined);
  await settle();
  assert.deepEqual(seen, [
    ["machined", "Starting", "Starting service"],
    ["machined", "Preparing", "Running pre state"],
    ["machined", "Preparing", "Creating service runner"],
    ["machined", "Running", "Service started as goroutine"],
    ["machined", "Running", "Health check successful"],
  ]);
  assert.deepEqual(
    sup.get("machined")!.events.map((e) => [e.state, e.msg]),
    seen.map(([, s, m]) => [s, m]),
  );
  await sup.stopAll();
});

test("a process's output lands in its service's log, kept across a restart; the process goes into its cgroup", async (t) => {
  const placed: [number, string, number | undefined][] = [];
  const cgroups: Cgroups = { setup: () => undefined, place: (pid, group, oom) => void placed.push([pid, group, oom]) };
  const logs = new ServiceLogs();
  const sup = new Supervisor({
    healthIntervalMs: 60_000,
    restartIntervalMs: 5000,
    slowStartNoticeMs: 30_000,
    logs,
    cgroups,
  });
  t.after(() => sup.stopAll());
  const exited: string[] = [];
  sup.onChange((s, e) => {
    if (e.state === "Finished" || e.state === "Failed") exited.push(e.msg);
  });
  const runner = new ProcessRunner({
    id: "printer",
    command: "/bin/sh",
    args: ["-c", "echo one; echo two >&2; printf three"],
  });
  await sup.start({ id: "printer", runner, restart: "never", cgroup: "/podruntime/runtime", oomScoreAdj: -999 });
  const running = sup.get("printer")!.events.find((e) => e.state === "Running")!.msg;
  assert.match(
    running,
    /^Process Process\(\["\/bin\/sh" "-c" "echo one; echo two >&2; printf three"\]\) started with PID (\d+)$/,
  );
  const pid = Number(/PID (\d+)/.exec(running)![1]);
  assert.deepEqual(placed, [[pid, "/podruntime/runtime", -999]]);
  while (exited.length === 0) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 20)); // the pipes' close after the exit
  assert.deepEqual(exited, ["Service finished successfully"]);
  const text = () => Buffer.concat(logs.read("printer", -1).lines).toString();
  // stdout and stderr are separate pipes: their relative order is not defined.
  assert.deepEqual(text().split("\n").filter(Boolean).sort(), ["one", "three", "two"]);
  assert.ok(text().endsWith("\n"), "a last line without a newline is ended when the process exits");
  exited.length = 0;
  await sup.start({ id: "printer", runner, restart: "never" });
  while (exited.length === 0) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(logs.read("printer", -1).lines.length, 6, "the second run's lines follow the first's");
  assert.equal(placed[1]![1], "/system/printer", "by default a service's group is /system/<id>");
});

test("a process's 'error' events after start (a failed kill, a pipe read error) are logged, never thrown", async (t) => {
  const runner = new ProcessRunner({ id: "sleeper", command: "/bin/sleep", args: ["30"] });
  const logs = new ServiceLogs();
  await runner.start(() => undefined, {
    openOutput: () => logs.writer("sleeper"),
    placeProcess: () => undefined,
    cgroup: "/system/sleeper",
    oomScoreAdj: undefined,
  });
  t.after(() => runner.stop());
  // The child is private; the test reaches it to emit what Node emits on those failures.
  const child = (runner as unknown as { child: import("node:child_process").ChildProcess }).child;
  for (const emitter of [child, child, child.stdout!, child.stderr!])
    emitter.emit("error", Object.assign(new Error("EPERM"), { code: "EPERM" }));
  assert.equal(child.exitCode, null, "still running");
});
