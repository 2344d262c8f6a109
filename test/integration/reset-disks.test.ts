// Reset's wipe modes on loop devices: the phases of the reset sequence that touch disks,
// run against a system disk's STATE and EPHEMERAL and a user disk, read back with blkid.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import type { MachineRuntime } from "../../agent/src/machined/runtime.js";
import { resetSequence, type ResetOptions } from "../../agent/src/machined/sequences.js";

const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const canRun =
  process.getuid?.() === 0 &&
  fs.existsSync("/dev/loop-control") &&
  (() => {
    try {
      sh("which", ["mkfs.xfs", "sfdisk", "blkid"]);
      return true;
    } catch {
      return false;
    }
  })();

const work = fs.mkdtempSync(path.join(os.tmpdir(), `basalt-reset-${process.pid}-`));
const loops: string[] = [];

function loop(file: string, sizeMiB: number): string {
  fs.writeFileSync(file, "");
  fs.truncateSync(file, sizeMiB * 1024 * 1024);
  const dev = sh("losetup", ["-f", "--show", file]).trim();
  loops.push(dev);
  return dev;
}

const signature = (dev: string) => {
  try {
    return (
      sh("blkid", ["-p", "-o", "value", "-s", "TYPE", dev]).trim() ||
      sh("blkid", ["-p", "-o", "value", "-s", "PTTYPE", dev]).trim()
    );
  } catch {
    return "none";
  }
};

/** Fresh filesystems on "STATE" and "EPHEMERAL" and a GPT with an xfs partition on the user disk. */
function prepare(): { state: string; ephemeral: string; user: string } {
  for (const l of loops.splice(0)) sh("losetup", ["-d", l]);
  const state = loop(path.join(work, "state.img"), 300);
  const ephemeral = loop(path.join(work, "ephemeral.img"), 300);
  const userFile = path.join(work, "user.img");
  fs.writeFileSync(userFile, "");
  fs.truncateSync(userFile, 400 * 1024 * 1024);
  execFileSync("sfdisk", ["--quiet", userFile], { input: "label: gpt\nstart=2048, size=600000, type=L\n" });
  const user = sh("losetup", ["-f", "--show", userFile]).trim();
  loops.push(user);
  for (const dev of [state, ephemeral]) sh("mkfs.xfs", ["-q", "-f", dev]);
  return { state, ephemeral, user };
}

async function runDiskPhases(devs: { state: string; ephemeral: string }, opts: Partial<ResetOptions>): Promise<void> {
  const r = {
    platform: { name: "metal", mode: "metal" },
    cmdline: new Map(),
    systemDisk: { disk: "/dev/basalt-test-system", partitions: { STATE: devs.state, EPHEMERAL: devs.ephemeral } },
  } as unknown as MachineRuntime; // only what the disk phases read
  const phases = resetSequence(r, { labels: [], reboot: true, mode: "all", userDisks: [], graceful: false, ...opts });
  for (const p of phases.filter((ph) => ph.name.startsWith("reset")))
    for (const t of p.tasks) await t.run(new AbortController().signal);
}

describe("Reset wipe modes", { skip: canRun ? false : "needs root, loop devices, mkfs.xfs, sfdisk, blkid" }, () => {
  after(() => {
    for (const l of loops) sh("losetup", ["-d", l]);
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("ALL with STATE and a user disk: STATE and the user disk are wiped, EPHEMERAL kept", async () => {
    const d = prepare();
    assert.equal(signature(d.user), "gpt");
    await runDiskPhases(d, { labels: ["STATE"], userDisks: [d.user] });
    assert.deepEqual([signature(d.state), signature(d.ephemeral), signature(d.user)], ["none", "xfs", "none"]);
  });

  it("USER_DISKS wipes only the user disk", async () => {
    const d = prepare();
    await runDiskPhases(d, { mode: "userDisks", userDisks: [d.user] });
    assert.deepEqual([signature(d.state), signature(d.ephemeral), signature(d.user)], ["xfs", "xfs", "none"]);
  });

  it("SYSTEM_DISK with STATE and EPHEMERAL leaves the user disk", async () => {
    const d = prepare();
    await runDiskPhases(d, { mode: "systemDisk", labels: ["STATE", "EPHEMERAL"] });
    assert.deepEqual([signature(d.state), signature(d.ephemeral), signature(d.user)], ["none", "none", "gpt"]);
  });
});
