import assert from "node:assert/strict";
import { test } from "node:test";
import { setLogSink } from "../../../agent/src/log.js";
import { runSequence } from "../../../agent/src/machined/sequencer.js";

function captureLogs(t: { after(fn: () => void): void }): Record<string, unknown>[] {
  const records: Record<string, unknown>[] = [];
  const previous = setLogSink((line) => records.push(JSON.parse(line) as Record<string, unknown>));
  t.after(() => setLogSink(previous));
  return records;
}

test("phases run in order, each step logged with its sequence, phase and task as fields", async (t) => {
  const logs = captureLogs(t);
  const order: string[] = [];
  const task = (name: string) => ({ name, run: async () => void order.push(name) });
  await runSequence(
    "boot",
    [
      { name: "one", tasks: [task("a"), task("b")] },
      { name: "two", tasks: [task("c")] },
    ],
    new AbortController().signal,
  );
  assert.deepEqual(order, ["a", "b", "c"]);
  const done = logs.find((r) => r["msg"] === "task c (1/1): done, " + String(r["durationMs"]) + "ms");
  assert.ok(done, JSON.stringify(logs));
  assert.equal(done["component"], "sequencer");
  assert.equal(done["sequence"], "boot");
  assert.equal(done["phase"], "two");
  assert.equal(done["task"], "c");
  assert.equal(typeof done["durationMs"], "number");
});

test("a failing task fails the sequence, later phases do not run, the failure is logged with its task", async (t) => {
  const logs = captureLogs(t);
  const ran: string[] = [];
  const phases = [
    {
      name: "one",
      tasks: [
        {
          name: "broken",
          run: async () => {
            throw new Error("disk missing");
          },
        },
      ],
    },
    { name: "two", tasks: [{ name: "later", run: async () => void ran.push("later") }] },
  ];
  await assert.rejects(runSequence("install", phases, new AbortController().signal), /disk missing/);
  assert.deepEqual(ran, []);
  const failed = logs.find((r) => r["level"] === "error" && r["task"] === "broken");
  assert.equal(failed?.["error"], "disk missing");
  assert.equal(failed?.["sequence"], "install");
});

test("a sequence that is taken over stops before its next phase", async () => {
  const ac = new AbortController();
  const ran: string[] = [];
  const phases = [
    {
      name: "one",
      tasks: [
        {
          name: "first",
          run: async () => {
            ran.push("first");
            ac.abort();
          },
        },
      ],
    },
    { name: "two", tasks: [{ name: "second", run: async () => void ran.push("second") }] },
  ];
  await assert.rejects(runSequence("boot", phases, ac.signal), /boot sequence was taken over/);
  assert.deepEqual(ran, ["first"]);
});
