import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { NotFoundError, SystemError } from "../../../agent/src/errors.js";
import { ContainerRunner } from "../../../agent/src/services/containerd/runner.js";
import type { ContainerdClient } from "../../../agent/src/sys/containerd/client.js";

test("a task whose wait fails while containerd is gone still reports its exit; the failed clean-up does not escape", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-runner-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const rejections: unknown[] = [];
  const onRejection = (err: unknown) => rejections.push(err);
  process.on("unhandledRejection", onRejection);
  t.after(() => process.off("unhandledRejection", onRejection));
  let loseContainerd!: () => void;
  const unavailable = () => new SystemError("containerd: connection refused");
  // Only what the runner calls; containerd goes away while the task runs.
  const client = {
    getContainer: async () => Promise.reject(new NotFoundError("no container")),
    createContainer: async () => ({}),
    createTask: async () => 1234,
    startTask: async () => 1234,
    waitTask: () => new Promise<number>((_, reject) => (loseContainerd = () => reject(unavailable()))),
    deleteTask: async () => Promise.reject(unavailable()),
    deleteContainer: async () => Promise.reject(unavailable()),
  } as unknown as ContainerdClient; // the fake implements the calls above only
  const runner = new ContainerRunner({
    id: "ext-hello",
    client: () => client,
    process: async () => ({
      args: ["/hello"],
      env: [],
      rootfs: dir,
      readonlyRootfs: true,
      mounts: [],
      cgroupsPath: "/system/extensions/hello",
      hostFiles: {},
      heldCapabilities: new Set(),
    }),
    logFile: path.join(dir, "log", "ext-hello.log"),
  });
  const exit = new Promise<Error | undefined>((resolve) => void runner.start(resolve).then(() => loseContainerd()));
  const err = await exit;
  assert.match(err?.message ?? "", /^waiting for task ext-hello failed: containerd: connection refused$/);
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(rejections, []);
});
