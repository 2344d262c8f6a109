// The whole-disk lock and the kernel's partitions told one by one (BLKPG), on loop devices with
// partitions enabled: util-linux's flock(1) is the other writer, sfdisk reads the table back, sysfs
// shows what the kernel holds.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { Logger, type LogFields } from "../../agent/src/log.js";
import { installToDisk } from "../../agent/src/storage/install.js";
import {
  DiskLockError,
  KernelDiskLocker,
  readKernelPartitions,
  withLockedDisk,
} from "../../agent/src/sys/disk-lock.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8" });
const canRun =
  process.getuid?.() === 0 &&
  fs.existsSync("/dev/loop-control") &&
  (() => {
    try {
      sh("which", ["flock", "grub-install", "mkfs.xfs", "mkfs.vfat", "sfdisk", "mcopy"]);
      return true;
    } catch {
      return false;
    }
  })();

// grub-install cannot map a loop device's partition (loopNpM) to a GRUB drive, so the install below is
// the arm64 one (grub-mkimage only), with the arm64 GRUB modules of the image build's cache.
const cache = path.resolve(import.meta.dirname, "..", "..", "..", "_out", "cache");
const arm64Grub = fs.existsSync(cache)
  ? fs
      .readdirSync(cache)
      .filter((d) => d.startsWith("arm64-base-"))
      .map((d) => path.join(cache, d, "tree", "usr", "lib", "grub"))
      .find((d) => fs.existsSync(path.join(d, "arm64-efi")))
  : undefined;

const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-disk-lock-"));
const loops: string[] = [];
const MiB = 1024 * 1024;

function loopDisk(name: string, bytes: number): string {
  const file = path.join(work, `${name}.img`);
  fs.writeFileSync(file, "");
  fs.truncateSync(file, bytes);
  const loop = sh("losetup", ["-fP", "--show", file]).trim();
  loops.push(loop);
  return loop;
}

/** Whether another process could take the disk's exclusive lock now (util-linux flock, non-blocking). */
const otherCanLock = (disk: string) => spawnSync("flock", ["--nonblock", "--exclusive", disk, "true"]).status === 0;

describe("whole-disk lock and BLKPG", {
  skip: canRun ? false : "needs root, loop devices, flock, grub-install, mkfs.xfs, mkfs.vfat",
}, () => {
  after(() => {
    for (const l of loops) spawnSync("losetup", ["-d", l]);
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("holds the disk exclusively until released; a second locker is refused meanwhile", async () => {
    const disk = loopDisk("lock", 16 * MiB);
    assert.equal(otherCanLock(disk), true);
    await withLockedDisk(new KernelDiskLocker(), disk, async () => {
      assert.equal(otherCanLock(disk), false);
      await assert.rejects(
        new KernelDiskLocker({ lockTimeoutMs: 0 }).lock(disk),
        (err: unknown) => err instanceof DiskLockError && /errno 11/.test(err.message),
      );
    });
    assert.equal(otherCanLock(disk), true);
  });

  it("makes the kernel's partitions exactly the wanted ones: differing removed, missing added, equal kept", async () => {
    const disk = loopDisk("blkpg", 64 * MiB);
    const locked = await new KernelDiskLocker().lock(disk);
    try {
      await locked.setKernelPartitions([
        { number: 1, startBytes: 1 * MiB, sizeBytes: 4 * MiB },
        { number: 2, startBytes: 5 * MiB, sizeBytes: 4 * MiB },
        { number: 3, startBytes: 9 * MiB, sizeBytes: 4 * MiB },
      ]);
      assert.deepEqual(readKernelPartitions(disk), [
        { number: 1, startBytes: 1 * MiB, sizeBytes: 4 * MiB },
        { number: 2, startBytes: 5 * MiB, sizeBytes: 4 * MiB },
        { number: 3, startBytes: 9 * MiB, sizeBytes: 4 * MiB },
      ]);
      const keptInode = fs.statSync(`${disk}p1`).ino;
      const wanted = [
        { number: 1, startBytes: 1 * MiB, sizeBytes: 4 * MiB },
        { number: 2, startBytes: 5 * MiB, sizeBytes: 8 * MiB },
        { number: 4, startBytes: 20 * MiB, sizeBytes: 10 * MiB },
      ];
      await locked.setKernelPartitions(wanted);
      assert.deepEqual(readKernelPartitions(disk), wanted);
      assert.deepEqual(locked.kernelPartitions(), wanted);
      assert.equal(fs.existsSync(`${disk}p3`), false);
      assert.equal(fs.statSync(`${disk}p1`).ino, keptInode, "an unchanged partition is left alone");
      await locked.setKernelPartitions([]);
      assert.deepEqual(readKernelPartitions(disk), []);
    } finally {
      await locked.release();
    }
  });

  it("install holds the lock and gives the kernel exactly the written table's partitions, stale ones gone", {
    skip: arm64Grub ? false : "needs the arm64 image's base tree in _out/cache (GRUB arm64-efi)",
  }, async () => {
    const disk = loopDisk("install", 6 * 1024 * MiB);
    // A leftover the kernel shows from before (another layout), which must not survive the install.
    await withLockedDisk(new KernelDiskLocker(), disk, (locked) =>
      locked.setKernelPartitions([
        { number: 1, startBytes: 3 * MiB, sizeBytes: 7 * MiB },
        { number: 9, startBytes: 100 * MiB, sizeBytes: MiB },
      ]),
    );
    const source = { kernel: path.join(work, "vmlinuz"), initramfs: path.join(work, "initramfs.xz") };
    fs.writeFileSync(source.kernel, "kernel image bytes");
    fs.writeFileSync(source.initramfs, Buffer.alloc(MiB, 7));
    let lockedDuringWrites = 0;
    // Sampled at the install's own milestones: after partitioning and after the bootloader.
    class MilestoneLog extends Logger {
      override info(msg: string, fields?: LogFields): void {
        if (msg === "partition table written" || msg === "bootloader installed")
          lockedDuringWrites += otherCanLock(disk) ? 0 : 1;
        super.info(msg, fields);
      }
    }
    const installed = await installToDisk({
      disk,
      source,
      cmdline: "console=ttyS0",
      version: "v0.1.0-test",
      arch: "arm64",
      grubLib: arm64Grub!,
      workDir: path.join(work, "mnt"),
      mounter: systemMounter(),
      log: new MilestoneLog("test"),
    });
    assert.equal(lockedDuringWrites, 2);
    assert.equal(otherCanLock(disk), true, "released after the install");
    const table = JSON.parse(sh("sfdisk", ["--json", disk])) as {
      partitiontable: { sectorsize: number; partitions: { node: string; start: number; size: number; name: string }[] };
    };
    const fromDisk = table.partitiontable.partitions.map((p, i) => ({
      number: i + 1,
      startBytes: p.start * table.partitiontable.sectorsize,
      sizeBytes: p.size * table.partitiontable.sectorsize,
    }));
    assert.deepEqual(readKernelPartitions(disk), fromDisk);
    assert.deepEqual(
      table.partitiontable.partitions.map((p) => p.name),
      ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"],
    );
    assert.deepEqual(installed.partitions, {
      EFI: `${disk}p1`,
      BIOS: `${disk}p2`,
      BOOT: `${disk}p3`,
      META: `${disk}p4`,
      STATE: `${disk}p5`,
      EPHEMERAL: `${disk}p6`,
    });
    assert.equal(sh("blkid", ["-p", "-o", "value", "-s", "TYPE", installed.partitions.BOOT]).trim(), "xfs");
  });
});
