import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { cgroupfs } from "../../../agent/src/sys/cgroups.js";

test("setup lays out Talos's groups with their memory protection and moves init into /init; place moves a pid and sets its OOM score", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-cgroup-"));
  const proc = mkdtempSync(path.join(os.tmpdir(), "basalt-proc-"));
  try {
    // What the kernel offers at the top (no io controller here); the children's lists come from it.
    writeFileSync(path.join(root, "cgroup.controllers"), "cpuset cpu memory pids\n");
    for (const d of ["system", "podruntime"]) {
      mkdirSync(path.join(root, d));
      writeFileSync(path.join(root, d, "cgroup.controllers"), "cpu memory pids\n");
    }
    const cg = cgroupfs(root, proc);
    cg.setup(4242);
    const read = (...p: string[]) => readFileSync(path.join(root, ...p), "utf8");
    assert.equal(read("cgroup.subtree_control"), "+cpu +memory +pids");
    assert.equal(read("system", "cgroup.subtree_control"), "+cpu +memory +pids");
    assert.equal(read("init", "cgroup.procs"), "4242");
    const MiB = 1024 * 1024;
    assert.deepEqual(
      [["init"], ["system"], ["podruntime", "runtime"], ["podruntime", "kubelet"], ["system", "dashboard"]].map((g) => [
        g.join("/"),
        Number(read(...g, "memory.min")),
        Number(read(...g, "memory.low")),
      ]),
      [
        ["init", 96 * MiB, 192 * MiB],
        ["system", 96 * MiB, 192 * MiB],
        ["podruntime/runtime", 128 * MiB, 256 * MiB],
        ["podruntime/kubelet", 64 * MiB, 128 * MiB],
        ["system/dashboard", 85 * MiB, 100 * MiB],
      ],
    );
    for (const g of ["kubepods", "system/runtime", "system/udevd"])
      assert.ok(statSync(path.join(root, g)).isDirectory(), g);
    mkdirSync(path.join(proc, "77"));
    cg.place(77, "/system/apid", -998);
    assert.equal(read("system", "apid", "cgroup.procs"), "77");
    assert.equal(readFileSync(path.join(proc, "77", "oom_score_adj"), "utf8"), "-998");
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(proc, { recursive: true, force: true });
  }
});
