// etcdutl for a restore: the arguments of its two runs, how their results become a status or a
// named error, the host program's exit code and output, the process of a run from etcd's image,
// and a one-shot containerd task's exit code and output (against a fake containerd).
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { NotFoundError } from "../../../agent/src/errors.js";
import { runToEnd, taskOutputFile, TaskAbortedError } from "../../../agent/src/services/containerd/one-shot.js";
import { ociSpec } from "../../../agent/src/services/containerd/oci-spec.js";
import { ContainerRunner } from "../../../agent/src/services/containerd/runner.js";
import { etcdutlImageProcess } from "../../../agent/src/services/definitions/etcdutl-image.js";
import type { ContainerdClient } from "../../../agent/src/sys/containerd/client.js";
import { etcdPaths } from "../../../agent/src/sys/etcd/paths.js";
import {
  EtcdRestoreError,
  hostEtcdutl,
  restoreSnapshot,
  snapshotRestoreArgs,
  snapshotStatus,
  snapshotStatusArgs,
  statusRuns,
  type Etcdutl,
  type EtcdutlResult,
} from "../../../agent/src/sys/etcd/restore.js";
import { nodePaths } from "../../../agent/src/sys/paths.js";
import { Logger, setLogSink } from "../../../agent/src/log.js";

const paths = etcdPaths(nodePaths);
const restore = {
  snapshot: "/var/lib/etcd.snapshot",
  name: "cp-1",
  dataDir: "/var/lib/etcd",
  peerURLs: ["https://10.5.0.2:2380", "https://[fd00::2]:2380"],
  initialCluster: "cp-1=https://10.5.0.2:2380,https://[fd00::2]:2380",
  skipHashCheck: false,
};

/** An etcdutl that answers `result` and records its arguments. */
function fakeEtcdutl(result: EtcdutlResult): { etcdutl: Etcdutl; calls: string[][] } {
  const calls: string[][] = [];
  return { calls, etcdutl: async (args) => (calls.push(args), result) };
}

test("etcdutl's arguments: status as JSON, restore into the data directory as a new one-member cluster", () => {
  assert.deepEqual(snapshotStatusArgs("/var/lib/etcd.snapshot"), [
    "snapshot",
    "status",
    "/var/lib/etcd.snapshot",
    "-w",
    "json",
  ]);
  assert.deepEqual(snapshotRestoreArgs(restore), [
    "snapshot",
    "restore",
    "/var/lib/etcd.snapshot",
    "--name=cp-1",
    "--data-dir=/var/lib/etcd",
    "--initial-cluster=cp-1=https://10.5.0.2:2380,https://[fd00::2]:2380",
    "--initial-advertise-peer-urls=https://10.5.0.2:2380,https://[fd00::2]:2380",
  ]);
  assert.deepEqual(snapshotRestoreArgs({ ...restore, skipHashCheck: true }).at(-1), "--skip-hash-check");
});

test("a status is etcdutl's JSON; a failed run is named with etcdutl's error, as Talos words the library's", async () => {
  // A log line of etcdutl's around it is no status.
  const ok = fakeEtcdutl({
    exitCode: 0,
    output:
      '{"level":"info","msg":"x"}\n{"hash":3735928559,"revision":12,"totalKey":9,"totalSize":20480}\n{"level":"warn"}\n',
  });
  assert.deepEqual(await snapshotStatus(ok.etcdutl, "/var/lib/etcd.snapshot"), {
    hash: 3735928559,
    revision: 12,
    totalKey: 9,
    totalSize: 20480,
  });
  assert.deepEqual(ok.calls, [["snapshot", "status", "/var/lib/etcd.snapshot", "-w", "json"]]);

  const bad = fakeEtcdutl({ exitCode: 1, output: '{"level":"info"}\nError: snapshot file integrity check failed\n' });
  await assert.rejects(
    snapshotStatus(bad.etcdutl, "/s"),
    (err: unknown) =>
      err instanceof EtcdRestoreError &&
      err.message === "error verifying snapshot: snapshot file integrity check failed" &&
      err.fields.exitCode === 1,
  );
  await assert.rejects(
    restoreSnapshot(bad.etcdutl, restore),
    (err: unknown) =>
      err instanceof EtcdRestoreError &&
      err.message === "error recovering from the snapshot: snapshot file integrity check failed",
  );
  const silent = fakeEtcdutl({ exitCode: 2, output: "" });
  await assert.rejects(
    restoreSnapshot(silent.etcdutl, restore),
    /^EtcdRestoreError: error recovering from the snapshot: exit code 2$/,
  );

  for (const output of ["hash 1", '{"hash":1}', "{not json", ""]) {
    const printsNoStatus = fakeEtcdutl({ exitCode: 0, output });
    await assert.rejects(
      snapshotStatus(printsNoStatus.etcdutl, "/s"),
      /^EtcdRestoreError: error verifying snapshot: etcdutl printed no status with hash, revision, totalKey and totalSize \(3 runs\)$/,
    );
    assert.equal(printsNoStatus.calls.length, statusRuns);
  }
  const unrunnable: Etcdutl = async () => Promise.reject(new Error("no image"));
  await assert.rejects(
    restoreSnapshot(unrunnable, restore),
    (err: unknown) =>
      err instanceof EtcdRestoreError &&
      err.message === "error recovering from the snapshot" &&
      (err.cause as Error).message === "no image",
  );
});

test("a status run whose output was lost is made again: the status of the run that printed it", async () => {
  const status = '{"hash":1,"revision":2,"totalKey":3,"totalSize":4}\n';
  const outputs = ["", '{"level":"info","msg":"x"}\n', status];
  const calls: string[][] = [];
  const lossy: Etcdutl = async (args) => (calls.push(args), { exitCode: 0, output: outputs[calls.length - 1]! });
  const lines: string[] = [];
  const previous = setLogSink((line) => lines.push(line));
  try {
    const status = await snapshotStatus(lossy, "/s", { log: new Logger("etcd") });
    assert.deepEqual(status, { hash: 1, revision: 2, totalKey: 3, totalSize: 4 });
  } finally {
    setLogSink(previous);
  }
  assert.equal(calls.length, 3);
  assert.deepEqual(
    lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .map(({ level, msg, run, output }) => ({ level, msg, run, output })),
    [
      { level: "warn", msg: "etcdutl printed no snapshot status; running it again", run: 1, output: "" },
      { level: "warn", msg: "etcdutl printed no snapshot status; running it again", run: 2, output: outputs[1] },
    ],
  );
  // A failed run is not made again: its exit code is etcdutl's answer.
  const failed = fakeEtcdutl({ exitCode: 1, output: "" });
  await assert.rejects(snapshotStatus(failed.etcdutl, "/s"), /error verifying snapshot: exit code 1$/);
  assert.equal(failed.calls.length, 1);
});

test("the host etcdutl: its exit code and its stdout then stderr; a missing program rejects", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-etcdutl-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const program = path.join(dir, "etcdutl");
  writeFileSync(program, '#!/bin/sh\necho "args: $*"\necho "Error: $2" >&2\nexit 3\n');
  chmodSync(program, 0o755);
  const etcdutl = hostEtcdutl(program)("ignored/etcd:v3.5.13");
  assert.deepEqual(await etcdutl(["snapshot", "status"]), {
    exitCode: 3,
    output: "args: snapshot status\nError: status\n",
  });
  await assert.rejects(hostEtcdutl(path.join(dir, "missing"))("x")(["version"]), /ENOENT/);
});

test("etcdutl from etcd's image: /usr/local/bin/etcdutl as root with CAP_DAC_OVERRIDE only, the data directory and the snapshot mounted", () => {
  const held = new Set(["CAP_SYS_ADMIN", "CAP_DAC_OVERRIDE"]);
  const p = etcdutlImageProcess(snapshotStatusArgs(paths.recoverySnapshot), {
    paths,
    heldCapabilities: held,
    cgroupsPath: "/system/etcd",
  });
  assert.deepEqual(p, {
    args: ["/usr/local/bin/etcdutl", "snapshot", "status", "/var/lib/etcd.snapshot", "-w", "json"],
    env: [],
    user: { uid: 0, gid: 0 },
    capabilities: ["CAP_DAC_OVERRIDE"],
    readonlyRootfs: true,
    mounts: [
      { destination: "/var/lib/etcd", type: "bind", source: "/var/lib/etcd", options: ["rbind", "rw"] },
      {
        destination: "/var/lib/etcd.snapshot",
        type: "bind",
        source: "/var/lib/etcd.snapshot",
        options: ["rbind", "ro"],
      },
    ],
    hostFiles: {},
    heldCapabilities: held,
    cgroupsPath: "/system/etcd",
  });
  assert.equal("cgroupsPath" in etcdutlImageProcess([], { paths, heldCapabilities: held }), false);
  const spec = ociSpec({ ...p, rootfs: "rootfs", cgroupsPath: "/system/etcd" }) as {
    process: { user: unknown; capabilities: Record<string, string[]> };
    root: unknown;
  };
  assert.deepEqual(spec.process.user, { uid: 0, gid: 0 });
  assert.deepEqual(spec.process.capabilities, {
    bounding: ["CAP_DAC_OVERRIDE"],
    effective: ["CAP_DAC_OVERRIDE"],
    permitted: ["CAP_DAC_OVERRIDE"],
  });
  assert.deepEqual(spec.root, { path: "rootfs", readonly: true });
});

/** A containerd that runs one task: it writes `out` where the task's output goes, and exits with `exit` unless killed first. */
function fakeContainerd(task: { out: string; exit?: number }) {
  const calls: string[] = [];
  let exit: (code: number) => void = () => undefined;
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const client = {
    getContainer: async () => Promise.reject(new NotFoundError("no container")),
    createContainer: async () => (calls.push("createContainer"), {}),
    createTask: async (req: { stdout: string; stderr: string }) => {
      calls.push(`createTask ${req.stdout} ${req.stderr}`);
      writeFileSync(req.stdout.replace(/^file:\/\//, ""), task.out);
      return 1234;
    },
    startTask: async () => {
      started();
      if (task.exit !== undefined) setImmediate(() => exit(task.exit!));
      return 1234;
    },
    waitTask: () => new Promise<number>((resolve) => (exit = resolve)),
    killTask: async (_id: string, signal: number) => {
      calls.push(`kill ${signal}`);
      setImmediate(() => exit(128 + signal));
    },
    deleteTask: async () => void calls.push("deleteTask"),
    deleteContainer: async () => void calls.push("deleteContainer"),
  } as unknown as ContainerdClient; // the fake implements the calls above only
  return { client, calls, running };
}

function oneShotRunner(client: ContainerdClient, dir: string): { runner: ContainerRunner; file: string } {
  const file = taskOutputFile(dir, "etcdutl");
  const runner = new ContainerRunner({
    id: "etcdutl",
    client: () => client,
    process: async () => ({
      args: ["/etcdutl"],
      env: [],
      rootfs: dir,
      readonlyRootfs: true,
      mounts: [],
      cgroupsPath: "",
      hostFiles: {},
      heldCapabilities: new Set(),
    }),
    logFile: file,
  });
  return { runner, file };
}

test("a one-shot task: its exit code and its output, read after the task is deleted; the file is removed", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-one-shot-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { client, calls } = fakeContainerd({ out: '{"level":"info"}\nError: bad\n', exit: 3 });
  const { runner, file } = oneShotRunner(client, dir);
  const result = await runToEnd(runner, "etcdutl", file);
  assert.deepEqual([result.exitCode, result.output.toString()], [3, '{"level":"info"}\nError: bad\n']);
  assert.deepEqual(calls, [
    "createContainer",
    `createTask file://${file} file://${file}`,
    "deleteTask",
    "deleteContainer",
  ]);
  assert.equal(existsSync(file), false);

  const clean = fakeContainerd({ out: "ok\n", exit: 0 });
  const second = oneShotRunner(clean.client, dir);
  const ok = await runToEnd(second.runner, "etcdutl", second.file);
  assert.deepEqual([ok.exitCode, ok.output.toString()], [0, "ok\n"]);
});

test("an aborted one-shot task is stopped (SIGTERM) and cleaned up, and the run rejects", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-one-shot-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const { client, calls, running } = fakeContainerd({ out: "" });
  const { runner, file } = oneShotRunner(client, dir);
  const abort = new AbortController();
  const run = runToEnd(runner, "etcdutl", file, abort.signal);
  await running;
  abort.abort(new Error("etcd stopped"));
  await assert.rejects(
    run,
    (err: unknown) =>
      err instanceof TaskAbortedError &&
      err.message === 'task "etcdutl" was stopped before it ended' &&
      (err.cause as Error).message === "etcd stopped",
  );
  assert.deepEqual(calls.slice(2), ["kill 15", "deleteTask", "deleteContainer"]);
  assert.equal(existsSync(file), false);
  await assert.rejects(runToEnd(runner, "etcdutl", file, abort.signal), TaskAbortedError);
});
