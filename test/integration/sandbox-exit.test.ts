// How a sandbox ends: SIGTERM after a boot ends the process with status 0 (nothing left holding
// its event loop), and a sandbox killed outright takes its syslog relay with it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";
import { eventually, freePort, startSandbox } from "./helpers/sandbox.js";

const stateDirs: string[] = [];
after(async () => {
  for (const dir of stateDirs) await rm(dir, { recursive: true, force: true });
});

async function stateDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "basalt-sandbox-exit-"));
  stateDirs.push(dir);
  return dir;
}

/** The exit of `child` as code or signal, or "still running" once `ms` passed. */
function exitWithin(child: import("node:child_process").ChildProcess, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve("still running"), ms);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    });
  });
}

/** The pid is gone, or a zombie waiting for whoever adopted it: either way the program no longer runs. */
function notRunning(pid: number): boolean {
  try {
    // Field 3 of /proc/PID/stat, after the parenthesised command name, is the state.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

test("a configured sandbox exits with status 0 soon after SIGTERM", { timeout: 120_000 }, async () => {
  const trustdPort = await freePort();
  const { sandbox, admin } = await startConfiguredSandbox({
    clusterName: "exit",
    stateDir: await stateDir(),
    args: ["--trustd-listen", `127.0.0.1:${trustdPort}`],
  });
  try {
    // The boot's last phases start the system bus (login1) for the kubelet: its listening socket is what
    // outlived every service before.
    await eventually(async () => assert.match(sandbox.output(), /system bus with login1 listening/), 300);
    sandbox.child.kill("SIGTERM");
    // Services stop within their own timeouts (apid's is 5 s); 20 s is well past that.
    assert.equal(await exitWithin(sandbox.child, 20_000), "code 0", sandbox.output().slice(-2000));
  } finally {
    admin.close();
    await sandbox.stop(1000);
  }
});

test("a sandbox killed with SIGKILL leaves no syslog relay behind", { timeout: 60_000 }, async () => {
  const port = await freePort();
  const trustdPort = await freePort();
  const sandbox = startSandbox(await stateDir(), port, ["--trustd-listen", `127.0.0.1:${trustdPort}`]);
  try {
    const started = await eventually(async () => {
      const m = /Process Process\(\[[^\]]*syslog-relay[^\]]*\]\) started with PID (\d+)/.exec(sandbox.output());
      assert.ok(m, "syslogd's relay has not started yet");
      return Number(m[1]);
    }, 300);
    assert.equal(notRunning(started), false, "the relay runs while the sandbox does");
    sandbox.child.kill("SIGKILL");
    assert.equal(await exitWithin(sandbox.child, 10_000), "signal SIGKILL");
    await eventually(
      async () =>
        assert.ok(notRunning(started), `syslog-relay (pid ${started}) still runs after its sandbox was killed`),
      50,
    );
  } finally {
    await sandbox.stop(1000);
  }
});
