import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ProcessRunner } from "../../../agent/src/services/process-runner.js";

test("stop() after a start that failed its readiness (the child SIGKILLed and reaped) resolves instead of waiting for an exit already seen", { timeout: 60_000 }, async () => {
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
    await assert.rejects(runner.start(() => assert.fail("a failed start reports no exit")), /not ready/);
    // Reaped: its /proc entry is gone once Node has waited for it (and emitted its exit).
    while (fs.existsSync(`/proc/${pid}`)) await sleep(10);
    await new Promise((r) => setImmediate(r));
    await runner.stop();
    assert.equal(runner.pid, undefined);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
