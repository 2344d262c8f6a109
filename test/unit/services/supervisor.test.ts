import assert from "node:assert/strict";
import { test } from "node:test";
import type { ServiceRunner } from "../../../agent/src/services/service.js";
import { InProcessRunner } from "../../../agent/src/services/inprocess-runner.js";
import { Supervisor } from "../../../agent/src/services/supervisor.js";

function fakeRunner(opts: { failStart?: boolean; unhealthy?: string } = {}) {
  let exit: ((err: Error | undefined) => void) | undefined;
  const runner: ServiceRunner & { crash(): void; stops: number } = {
    stops: 0,
    async start(onExit) {
      if (opts.failStart) throw new Error("cannot start");
      exit = onExit;
    },
    async stop() {
      runner.stops++;
    },
    crash() {
      exit?.(new Error("crashed"));
    },
  };
  if (opts.unhealthy !== undefined)
    runner.health = async () => {
      throw new Error(opts.unhealthy);
    };
  return runner;
}

test("a started service is Running and healthy; stop finishes it", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const runner = fakeRunner();
  await sup.start({ id: "apid", runner, restart: "never" });
  assert.equal(sup.get("apid")?.state, "Running");
  assert.equal(sup.get("apid")?.health.healthy, true);
  await sup.stop("apid");
  assert.equal(sup.get("apid")?.state, "Finished");
  assert.equal(runner.stops, 1);
  assert.deepEqual(
    sup.get("apid")?.events.map((e) => [e.state, e.msg]),
    [
      ["Starting", "Starting service"],
      ["Preparing", "Running pre state"],
      ["Preparing", "Creating service runner"],
      ["Running", "Service started"],
      ["Running", "Health check successful"],
      ["Stopping", "Stopping service"],
      ["Finished", "Service finished successfully"],
    ],
  );
});

test("a crash with restart=always goes Waiting with Talos's message; health failures are reported", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const runner = fakeRunner({ unhealthy: "not listening" });
  const seen: string[] = [];
  sup.onChange((s) => seen.push(`${s.state}:${s.health.healthy}`));
  await sup.start({ id: "svc", runner, restart: "always" });
  await new Promise((r) => setImmediate(r));
  assert.equal(sup.get("svc")?.health.healthy, false);
  assert.equal(sup.get("svc")?.health.lastMessage, "not listening");
  assert.equal(sup.get("svc")!.events.at(-1)!.msg, "Health check failed: not listening");
  runner.crash();
  assert.deepEqual(sup.get("svc")!.events.at(-1), {
    ...sup.get("svc")!.events.at(-1)!,
    state: "Waiting",
    msg: "Error running svc, going to restart forever: crashed",
  });
  await sup.stopAll();
  assert.deepEqual(seen.slice(-3), ["Waiting:false", "Stopping:false", "Finished:false"]);
});

test("registerSelf lists machined as Running; list is sorted by id", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  sup.registerSelf("machined");
  await sup.start({ id: "apid", runner: fakeRunner(), restart: "never" });
  assert.deepEqual(
    sup.list().map((s) => [s.id, s.state]),
    [
      ["apid", "Running"],
      ["machined", "Running"],
    ],
  );
  await sup.stopAll();
});

test("a service that cannot start is retried after Talos's restart interval (restart=always)", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const runner = fakeRunner({ failStart: true });
  let starts = 0;
  const start = runner.start.bind(runner);
  runner.start = (onExit) => {
    starts++;
    return start(onExit);
  };
  await sup.start({ id: "bad", runner, restart: "always" });
  const states = sup.get("bad")!.events.map((e) => e.state);
  assert.deepEqual(states, ["Starting", "Preparing", "Preparing", "Waiting"]);
  assert.equal(starts, 1);
  t.mock.timers.tick(5000); // Talos's restart interval
  await new Promise((r) => setImmediate(r));
  assert.equal(starts, 2, "retried after the interval");
  await sup.stop("bad");
  assert.equal(sup.get("bad")?.state, "Finished", "a stopped service no longer reports a pending restart");
  t.mock.timers.tick(60_000);
  await new Promise((r) => setImmediate(r));
  assert.equal(starts, 2, "no restart after stop");
});

test("an in-process service runs until stopped; its failure is reported and restarted", async () => {
  const { InProcessRunner } = await import("../../../agent/src/services/inprocess-runner.js");
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  let aborted = false;
  let fail: ((err: Error) => void) | undefined;
  const runner = new InProcessRunner({
    id: "apid",
    run: (signal) =>
      new Promise<void>((resolve, reject) => {
        fail = reject;
        signal.addEventListener("abort", () => {
          aborted = true;
          resolve();
        });
      }),
  });
  await sup.start({ id: "apid", runner, restart: "always" });
  assert.equal(sup.get("apid")?.state, "Running");
  fail!(new Error("listener died"));
  await new Promise((r) => setImmediate(r));
  assert.equal(sup.get("apid")!.events.at(-1)!.state, "Waiting");
  assert.equal(
    sup.get("apid")!.events.at(-1)!.msg,
    'Error running Goroutine("apid"), going to restart forever: apid failed: listener died',
  );
  await sup.stopAll();
  const stopping = new InProcessRunner({
    id: "x",
    run: (signal) =>
      new Promise<void>((resolve) =>
        signal.addEventListener("abort", () => {
          aborted = true;
          resolve();
        }),
      ),
  });
  await stopping.start(() => undefined);
  await stopping.stop();
  assert.equal(aborted, true);
});

test("a service stopped while it is still starting does not turn Running and is stopped", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  let started: (() => void) | undefined;
  let stops = 0;
  let probes = 0;
  const runner: ServiceRunner = {
    start: () => new Promise<void>((resolve) => (started = resolve)),
    stop: async () => {
      stops++;
    },
    health: async () => {
      probes++;
    },
  };
  const starting = sup.start({ id: "slow", runner, restart: "always" });
  assert.equal(sup.get("slow")?.state, "Preparing");
  while (!started) await new Promise((r) => setImmediate(r)); // the runner is starting
  await sup.stop("slow");
  started!();
  await starting;
  assert.equal(sup.get("slow")?.state, "Finished");
  assert.deepEqual(
    sup.get("slow")!.events.map((e) => e.state),
    ["Starting", "Preparing", "Preparing", "Stopping", "Finished"],
  );
  assert.equal(stops, 2, "the runner that finished starting after stop() is stopped again");
  assert.equal(probes, 0, "no health polling for a stopped service");
});

/** Runs `fn` with the supervisor's log lines captured (JSON records). */
async function captureLogs(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const { setLogSink, setLogFormat } = await import("../../../agent/src/log.js");
  const lines: Record<string, unknown>[] = [];
  setLogFormat("json");
  const previous = setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  try {
    await fn();
  } finally {
    setLogSink(previous);
  }
  return lines.filter((l) => l["component"] === "supervisor");
}

test("every failure, restart and stop is logged with the service, the reason and the elapsed time", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const logs = await captureLogs(async () => {
    const sup = new Supervisor({ healthIntervalMs: 60_000 });
    const runner = fakeRunner();
    await sup.start({ id: "apid", runner, restart: "always" });
    runner.crash();
    t.mock.timers.tick(5000);
    await new Promise((r) => setImmediate(r));
    await sup.stop("apid", "configuration changed");
    const bad = fakeRunner({ failStart: true });
    await sup.start({ id: "bad", runner: bad, restart: "always" });
    await sup.stopAll();
  });
  const pick = (msg: string) =>
    logs.filter((l) => l["msg"] === msg).map((l) => [l["service"], l["reason"], typeof l["elapsedMs"]]);
  assert.deepEqual(pick("service exited"), [["apid", "crashed", "number"]]);
  assert.deepEqual(pick("restarting service"), [
    ["apid", "Error running apid, going to restart forever: crashed", "number"],
    ["bad", "Error running bad, going to restart forever: cannot start", "number"],
  ]);
  assert.deepEqual(pick("service failed to start"), [["bad", "cannot start", "number"]]);
  assert.deepEqual(pick("stopping service"), [["apid", "configuration changed", "number"]]);
});

test("a slow start is not a failure: the service stays Preparing (noted in the log), then runs without any restart", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  const { InProcessRunner } = await import("../../../agent/src/services/inprocess-runner.js");
  const { pollUntilReady } = await import("../../../agent/src/services/readiness.js");
  let listening = false;
  let runs = 0;
  const runner = new InProcessRunner({
    id: "apid",
    run: (signal) => {
      runs++;
      return new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
    },
    ready: (signal) =>
      pollUntilReady(
        async () => {
          if (!listening) throw new Error("apid is not listening");
        },
        signal,
        100,
      ),
  });
  const sup = new Supervisor({ healthIntervalMs: 60_000, restartIntervalMs: 5000, slowStartNoticeMs: 30_000 });
  let starting: Promise<void> | undefined;
  const logs = await captureLogs(async () => {
    starting = sup.start({ id: "apid", runner, restart: "always" });
    // 350 s of a loaded host, probing every 100 ms.
    for (let i = 0; i < 3500; i++) {
      t.mock.timers.tick(100);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(sup.get("apid")?.state, "Preparing");
    listening = true;
    t.mock.timers.tick(100);
    await starting;
  });
  assert.equal(sup.get("apid")?.state, "Running");
  assert.equal(runs, 1, "started once, never restarted");
  assert.deepEqual(
    sup.get("apid")!.events.map((e) => e.state),
    ["Starting", "Preparing", "Preparing", "Running", "Running"],
  );
  assert.ok(logs.some((l) => l["msg"] === "service is still starting" && l["service"] === "apid"));
  assert.deepEqual(
    logs.filter((l) => /restart|failed|exited/i.test(String(l["msg"]))),
    [],
  );
  await sup.stopAll();
});

test("an in-process service stopped while still starting ends its readiness wait and is not restarted", async () => {
  const { InProcessRunner } = await import("../../../agent/src/services/inprocess-runner.js");
  const { pollUntilReady } = await import("../../../agent/src/services/readiness.js");
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  const runner = new InProcessRunner({
    id: "apid",
    run: (signal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve())),
    ready: (signal) =>
      pollUntilReady(
        async () => {
          throw new Error("apid is not listening");
        },
        signal,
        10,
      ),
  });
  const starting = sup.start({ id: "apid", runner, restart: "always" });
  await new Promise((r) => setTimeout(r, 30));
  await sup.stop("apid");
  await starting;
  assert.deepEqual(
    sup.get("apid")!.events.map((e) => e.state),
    ["Starting", "Preparing", "Preparing", "Stopping", "Finished"],
  );
});

test("restart=untilSuccess restarts after a failed exit, not after a successful one", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  let exit: ((err: Error | undefined) => void) | undefined;
  const runner: ServiceRunner = {
    async start(onExit) {
      exit = onExit;
    },
    async stop() {},
  };
  await sup.start({ id: "ext-once", runner, restart: "untilSuccess" });
  exit!(new Error("exit code 1"));
  // As Talos's restarter: the failed run is reported Waiting, for the interval before the next run.
  const last = sup.get("ext-once")!.events.at(-1)!;
  assert.equal(last.state, "Waiting");
  assert.match(last.msg, /^Error running ext-once, going to restart until it succeeds: exit code 1/);
  await sup.stop("ext-once");
  await sup.start({ id: "ext-once", runner, restart: "untilSuccess" });
  exit!(undefined);
  assert.deepEqual(
    sup
      .get("ext-once")!
      .events.map((e) => e.state)
      .slice(-1),
    ["Finished"],
  );
  await sup.stopAll();
});

test("a listener that throws is logged: the service still starts and its health is reported (nothing escapes as an unhandled rejection)", async (t) => {
  const rejections: unknown[] = [];
  const onRejection = (err: unknown) => rejections.push(err);
  process.on("unhandledRejection", onRejection);
  t.after(() => process.off("unhandledRejection", onRejection));
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  t.after(() => sup.stopAll());
  sup.onChange(() => {
    throw new Error("listener broke");
  });
  const runner = fakeRunner();
  runner.health = async () => undefined;
  await sup.start({ id: "svc", runner, restart: "always" });
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  assert.equal(sup.get("svc")?.state, "Running");
  assert.equal(sup.get("svc")?.health.healthy, true);
  assert.deepEqual(rejections, []);
});

test("a failed pre stage is Failed with Talos's message whatever the restart policy: no restart, no post, the runner never started", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  let starts = 0;
  let posts = 0;
  const runner: ServiceRunner = { start: async () => void starts++, stop: async () => undefined };
  await sup.start({
    id: "svc",
    runner,
    restart: "always",
    pre: async () => {
      throw new Error("mkdir /var/x: read-only file system");
    },
    post: async () => void posts++,
  });
  assert.deepEqual(
    sup.get("svc")!.events.map((e) => [e.state, e.msg]),
    [
      ["Starting", "Starting service"],
      ["Preparing", "Running pre state"],
      ["Failed", "Failed to run pre stage: mkdir /var/x: read-only file system"],
    ],
  );
  t.mock.timers.tick(120_000);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual([starts, posts, sup.get("svc")!.state], [0, 0, "Failed"]);
});

test("a health probe slower than the interval is not started again beside itself", async () => {
  const sup = new Supervisor({ healthIntervalMs: 5 });
  let inFlight = 0;
  let most = 0;
  let calls = 0;
  let finish: (() => void) | undefined;
  const runner: ServiceRunner = {
    start: async () => undefined,
    stop: async () => undefined,
    health: () => {
      calls++;
      inFlight++;
      most = Math.max(most, inFlight);
      return new Promise<void>(
        (resolve) =>
          (finish = () => {
            inFlight--;
            resolve();
          }),
      );
    },
  };
  await sup.start({ id: "slow-probe", runner, restart: "never" });
  // Twenty intervals pass while the first probe runs.
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(calls, 1, "one probe while it has not answered");
  finish!();
  while (calls < 2) await new Promise((r) => setTimeout(r, 5));
  finish!();
  assert.equal(most, 1, "never two probes at once");
  assert.equal(sup.get("slow-probe")?.health.healthy, true);
  await sup.stopAll();
});

test("an in-process service has a log from its start, as every listed service does; a failed run is its last line", async () => {
  const sup = new Supervisor({ healthIntervalMs: 60_000 });
  let fail: ((err: Error) => void) | undefined;
  const runner = new InProcessRunner({ id: "dashboard", run: () => new Promise<void>((_, reject) => (fail = reject)) });
  await sup.start({ id: "dashboard", runner, restart: "never" });
  assert.deepEqual(sup.logs.ids(), ["dashboard"]);
  assert.deepEqual(sup.logs.read("dashboard", -1).lines, []);
  const failed = new Promise<void>((resolve) =>
    sup.onChange(() => sup.get("dashboard")?.state === "Failed" && resolve()),
  );
  fail!(new Error("terminal gone"));
  await failed;
  assert.deepEqual(sup.logs.read("dashboard", -1).lines.map(String), ["dashboard failed: terminal gone\n"]);
});
