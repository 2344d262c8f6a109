import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { LogNotRegisteredError, ServiceLogs } from "../../../agent/src/services/logs.js";

const text = (lines: Buffer[]) => Buffer.concat(lines).toString();

test("a log keeps whole lines, tails them, and drops the oldest past its bound", () => {
  const logs = new ServiceLogs({ maxBytes: 20 });
  const w = logs.writer("svc");
  w.write("aaaa\nbb");
  w.write("bb\ncccc\n");
  assert.equal(text(logs.read("svc", -1).lines), "aaaa\nbbbb\ncccc\n");
  assert.equal(text(logs.read("svc", 2).lines), "bbbb\ncccc\n");
  assert.equal(text(logs.read("svc", 0).lines), "");
  w.write("dddddddddd\n"); // 26 bytes > 20: the oldest go
  assert.equal(text(logs.read("svc", -1).lines), "cccc\ndddddddddd\n");
});

test("an id nothing wrote to is not registered, with Talos's message", () => {
  const logs = new ServiceLogs();
  assert.throws(
    () => logs.read("nosuchservice", 10),
    (e: Error) => e instanceof LogNotRegisteredError && e.message === 'log "nosuchservice" was not registered',
  );
  logs.writer("b");
  logs.writer("a");
  assert.deepEqual(logs.ids(), ["a", "b"]);
});

test("follow sees every line after the tail, none twice; stop ends it", () => {
  const logs = new ServiceLogs();
  const w = logs.writer("svc");
  w.write("1\n2\n");
  const followed: string[] = [];
  const { lines, stop } = logs.read("svc", 1, (l) => followed.push(l.toString()));
  assert.equal(text(lines), "2\n");
  w.write("3\n4");
  w.flush();
  stop();
  w.write("5\n");
  assert.deepEqual(followed, ["3\n", "4\n"]);
});

test("spilled logs hold what was there before and everything after, in <dir>/<id>.log", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-logs-"));
  try {
    const logs = new ServiceLogs();
    logs.writer("apid").write("before\n");
    logs.spillTo(dir);
    logs.writer("apid").write("after\n");
    logs.writer("late").write("new log\n");
    await logs.closeFiles();
    assert.equal(readFileSync(path.join(dir, "apid.log"), "utf8"), "before\nafter\n");
    assert.equal(readFileSync(path.join(dir, "late.log"), "utf8"), "new log\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
