import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PermissionDeniedError } from "../../../agent/src/errors.js";
import { type LogSink, setLogSink } from "../../../agent/src/log.js";
import { type Controller, ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

const NS = "runtime";
const IN = "Numbers.test.dev";
const OUT = "Doubles.test.dev";

interface Num {
  n: number;
}

/** Toy controller: for every Number it outputs a Double with n*2; removes Doubles whose Number went away. */
function doubler(onRun?: () => void): Controller {
  return {
    name: "test.DoublerController",
    inputs: [{ namespace: NS, type: IN }],
    outputs: [{ type: OUT }],
    async reconcile(ctx) {
      onRun?.();
      const keep = new Set<string>();
      for (const r of ctx.list<Num>(NS, IN)) {
        keep.add(r.metadata.id);
        ctx.modify<Num>(NS, OUT, r.metadata.id, () => ({ n: r.spec.n * 2 }));
      }
      ctx.destroyOthers(NS, OUT, keep);
    },
  };
}

function captureLogs(): { lines: string[]; restore: () => void } {
  const lines: string[] = [];
  const sink: LogSink = (l) => lines.push(l);
  const previous = setLogSink(sink);
  return { lines, restore: () => setLogSink(previous) };
}

describe("ControllerRuntime", () => {
  it("reconciles on start and on input changes, owning its outputs", async () => {
    const state = new ResourceState();
    state.create(newResource<Num>(NS, IN, "a", { n: 1 }), { owner: "" });
    const rt = new ControllerRuntime(state);
    rt.register(doubler());
    const ac = new AbortController();
    rt.start(ac.signal);
    await rt.whenIdle();
    const a = state.get<Num>(NS, OUT, "a");
    assert.equal(a?.spec.n, 2);
    assert.equal(a?.metadata.owner, "test.DoublerController");

    state.modify<Num>(NS, IN, "a", "", () => ({ n: 5 }));
    state.create(newResource<Num>(NS, IN, "b", { n: 7 }), { owner: "" });
    await rt.whenIdle();
    assert.equal(state.get<Num>(NS, OUT, "a")?.spec.n, 10);
    assert.equal(state.get<Num>(NS, OUT, "b")?.spec.n, 14);

    state.destroy(NS, IN, "a", { owner: "" });
    await rt.whenIdle();
    assert.equal(state.get(NS, OUT, "a"), undefined);
    assert.throws(() => state.modify<Num>(NS, OUT, "b", "someone-else", () => ({ n: 0 })), PermissionDeniedError);
    ac.abort();
  });

  it("coalesces a burst of input changes into few runs", async () => {
    const state = new ResourceState();
    let runs = 0;
    const rt = new ControllerRuntime(state);
    rt.register(doubler(() => runs++));
    const ac = new AbortController();
    rt.start(ac.signal);
    await rt.whenIdle();
    const before = runs;
    for (let i = 0; i < 50; i++) state.modify<Num>(NS, IN, "x", "", () => ({ n: i }));
    await rt.whenIdle();
    assert.equal(runs - before, 1);
    assert.equal(state.get<Num>(NS, OUT, "x")?.spec.n, 98);
    ac.abort();
  });

  it("refuses writes outside the declared outputs and duplicate exclusive owners", async () => {
    const state = new ResourceState();
    const rt = new ControllerRuntime(state);
    let caught: unknown;
    rt.register({
      name: "test.Rogue",
      inputs: [],
      outputs: [{ type: OUT }],
      async reconcile(ctx) {
        try {
          ctx.modify(NS, IN, "x", () => ({ n: 1 }));
        } catch (err) {
          caught = err;
        }
      },
    });
    assert.throws(() => rt.register({ ...doubler(), name: "test.Other" }), PermissionDeniedError);
    const ac = new AbortController();
    const logs = captureLogs();
    rt.start(ac.signal);
    await rt.whenIdle();
    logs.restore();
    assert.ok(caught instanceof PermissionDeniedError);
    assert.equal(state.get(NS, IN, "x"), undefined);
    ac.abort();
  });

  it("retries a failing reconcile with backoff and logs under controller-runtime with its name", async () => {
    const state = new ResourceState();
    const rt = new ControllerRuntime(state, { initialBackoffMs: 1, maxBackoffMs: 4 });
    let calls = 0;
    let done!: () => void;
    const succeeded = new Promise<void>((r) => (done = r));
    rt.register({
      name: "test.Flaky",
      inputs: [],
      outputs: [{ type: OUT }],
      async reconcile(ctx) {
        calls++;
        if (calls < 3) throw new Error(`boom ${calls}`);
        ctx.modify<Num>(NS, OUT, "ok", () => ({ n: calls }));
        done();
      },
    });
    const logs = captureLogs();
    const ac = new AbortController();
    rt.start(ac.signal);
    await succeeded;
    logs.restore();
    ac.abort();
    assert.equal(state.get<Num>(NS, OUT, "ok")?.spec.n, 3);
    const failures = logs.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.msg === "controller failed");
    assert.equal(failures.length, 2);
    assert.equal(failures[0]!.component, "controller-runtime");
    assert.equal(failures[0]!.controller, "test.Flaky");
    assert.equal(failures[0]!.error, "boom 1");
    assert.deepEqual(
      failures.map((f) => f.retryInMs),
      [1, 2],
    );
  });

  it("stops reacting after abort", async () => {
    const state = new ResourceState();
    let runs = 0;
    const rt = new ControllerRuntime(state);
    rt.register(doubler(() => runs++));
    const ac = new AbortController();
    rt.start(ac.signal);
    await rt.whenIdle();
    ac.abort();
    const before = runs;
    state.create(newResource<Num>(NS, IN, "late", { n: 1 }), { owner: "" });
    await rt.whenIdle();
    await new Promise((r) => setImmediate(r));
    assert.equal(runs, before);
    assert.equal(state.get(NS, OUT, "late"), undefined);
  });

  it("a requeue asked for during shutdown leaves no timer behind", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const rt = new ControllerRuntime(new ResourceState());
    const ac = new AbortController();
    rt.register({
      name: "test.Poller",
      inputs: [],
      outputs: [],
      async reconcile(ctx) {
        ac.abort(); // shutdown begins while this reconcile runs
        ctx.requeueAfter(5_000); // short: without the fix this timer would hold the test process
      },
    });
    const before = timers();
    rt.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    await rt.whenIdle();
    assert.equal(timers(), before, "a pending requeue timer would keep the process alive after shutdown");
  });

  it("lists dependencies", () => {
    const rt = new ControllerRuntime(new ResourceState());
    rt.register(doubler());
    rt.register({
      name: "test.Single",
      inputs: [{ namespace: NS, type: OUT, id: "a", kind: "weak" }],
      outputs: [{ type: "Triples.test.dev" }],
      reconcile: async () => {},
    });
    assert.deepEqual(rt.dependencies(), [
      { controllerName: "test.DoublerController", edgeType: "inputStrong", namespace: NS, type: IN },
      { controllerName: "test.DoublerController", edgeType: "outputExclusive", namespace: "", type: OUT },
      { controllerName: "test.Single", edgeType: "inputWeak", namespace: NS, type: OUT, id: "a" },
      { controllerName: "test.Single", edgeType: "outputExclusive", namespace: "", type: "Triples.test.dev" },
    ]);
  });
});
