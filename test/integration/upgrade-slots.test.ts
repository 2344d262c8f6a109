// The A/B slots on a real installed disk (loop devices, xfs BOOT, META): an upgrade writes
// slot B and GRUB's one-time entry, a confirm makes B the default, a rollback flips back,
// a failed trial drops the failed slot; META 0x06 follows each step.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { logger } from "../../agent/src/log.js";
import type { GptTable } from "../../agent/src/storage/gpt.js";
import { installToDisk, type InstalledDisk } from "../../agent/src/storage/install.js";
import { MetaStore, MetaTag } from "../../agent/src/storage/meta.js";
import {
  abandonUpgrade,
  confirmUpgrade,
  currentSlots,
  loadTrialKexec,
  rollbackToOtherSlot,
  writeUpgradeSlot,
  type BootPartition,
} from "../../agent/src/storage/upgrade.js";
import { openBlockTarget } from "../../agent/src/sys/blockdev.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8" });
const canRun =
  process.getuid?.() === 0 &&
  fs.existsSync("/dev/loop-control") &&
  (() => {
    try {
      sh("which", ["grub-install", "mkfs.xfs", "mkfs.vfat", "mcopy", "grub-editenv"]);
      return true;
    } catch {
      return false;
    }
  })();

const work = fs.mkdtempSync(path.join(os.tmpdir(), `basalt-upgrade-${process.pid}-`));
const loops: string[] = [];
const mounter = systemMounter();
const log = logger("test");
const v1 = { kernel: path.join(work, "vmlinuz-1"), initramfs: path.join(work, "initramfs-1.xz") };
const v2 = { kernel: path.join(work, "vmlinuz-2"), initramfs: path.join(work, "initramfs-2.xz") };

async function loopPartitions(disk: string, table: GptTable): Promise<string[]> {
  return table.partitions.map((p) => {
    const offset = Number(p.firstLba) * table.sectorSize;
    const size = Number(p.lastLba - p.firstLba + 1n) * table.sectorSize;
    const loop = sh("losetup", ["-f", "--show", "-o", String(offset), "--sizelimit", String(size), disk]).trim();
    loops.unshift(loop);
    return loop;
  });
}

async function onBoot<T>(dev: string, fn: (dir: string) => T): Promise<T> {
  const dir = fs.mkdtempSync(path.join(work, "m-"));
  await mounter.mount(dev, dir, "xfs", ["ro"]);
  try {
    return fn(dir);
  } finally {
    await mounter.unmount(dir);
  }
}

describe("A/B slots on an installed disk", {
  skip: canRun ? false : "needs root, loop devices, grub-install, mkfs.xfs, mkfs.vfat, grub-editenv",
}, () => {
  let installed: InstalledDisk;
  let meta: MetaStore;
  let boot: BootPartition;
  before(async () => {
    fs.writeFileSync(v1.kernel, "kernel one");
    fs.writeFileSync(v1.initramfs, Buffer.alloc(1024 * 1024, 1));
    fs.writeFileSync(v2.kernel, "kernel two");
    fs.writeFileSync(v2.initramfs, Buffer.alloc(2 * 1024 * 1024, 2));
    const file = path.join(work, "disk.img");
    fs.writeFileSync(file, "");
    fs.truncateSync(file, 6 * 1024 ** 3);
    const disk = sh("losetup", ["-f", "--show", file]).trim();
    loops.push(disk);
    installed = await installToDisk({
      disk,
      source: v1,
      cmdline: "talos.platform=metal console=ttyS0",
      version: "v1",
      arch: "amd64",
      workDir: path.join(work, "install"),
      mounter,
      log,
      attachPartitions: loopPartitions,
    });
    meta = await MetaStore.open(await openBlockTarget(installed.partitions.META));
    boot = { device: installed.partitions.BOOT, mounter, mountDir: path.join(work, "boot"), arch: "amd64" };
  });
  after(async () => {
    await meta?.close();
    for (const l of loops) {
      try {
        sh("losetup", ["-d", l]);
      } catch {
        // already detached
      }
    }
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("upgrade writes slot B, records A in META 0x06 and sets GRUB's one-time entry; the default stays A", async () => {
    const plan = await writeUpgradeSlot(
      boot,
      meta,
      v2,
      { version: "v2", cmdline: "talos.platform=metal console=ttyS0 panic=10" },
      log,
    );
    assert.equal(plan.target, "B");
    assert.equal(meta.get(MetaTag.upgrade), "A");
    await onBoot(installed.partitions.BOOT, (dir) => {
      assert.equal(fs.readFileSync(path.join(dir, "B", "vmlinuz"), "utf8"), "kernel two");
      assert.ok(fs.readFileSync(path.join(dir, "B", "initramfs.xz")).equals(fs.readFileSync(v2.initramfs)));
      assert.equal(fs.readFileSync(path.join(dir, "A", "vmlinuz"), "utf8"), "kernel one", "slot A untouched");
      assert.equal(sh("grub-editenv", [path.join(dir, "grub", "grubenv"), "list"]), "next_entry=B - Basalt v2\n");
      assert.deepEqual(fs.readdirSync(path.join(dir, "B")).sort(), ["initramfs.xz", "vmlinuz"], "no temporaries left");
    });
    assert.deepEqual(await currentSlots(boot), {
      default: "A",
      fallback: "B",
      entries: {
        A: { version: "v1", cmdline: "talos.platform=metal console=ttyS0" },
        B: { version: "v2", cmdline: "talos.platform=metal console=ttyS0 panic=10" },
      },
    });
    // META on disk, read again from the partition.
    const reread = await MetaStore.open(await openBlockTarget(installed.partitions.META));
    assert.equal(reread.get(MetaTag.upgrade), "A");
    await reread.close();
  });

  it("confirm makes B the default with A its fallback, clears the one-time entry and deletes 0x06", async () => {
    const slots = await confirmUpgrade(boot, meta, "B");
    assert.equal(slots.default, "B");
    assert.equal(slots.fallback, "A");
    assert.equal(meta.get(MetaTag.upgrade), undefined);
    await onBoot(installed.partitions.BOOT, (dir) =>
      assert.equal(sh("grub-editenv", [path.join(dir, "grub", "grubenv"), "list"]), ""),
    );
  });

  it("rollback flips the default back to A", async () => {
    const slots = await rollbackToOtherSlot(boot, meta);
    assert.deepEqual([slots.default, slots.fallback], ["A", "B"]);
    assert.equal((await currentSlots(boot)).default, "A");
  });

  it("a write that stops midway leaves grub.cfg without the slot, no 0x06 and no one-time entry; the next write starts clean", async () => {
    const unreadable = { kernel: v2.kernel, initramfs: path.join(work, "no-such-initramfs") };
    await assert.rejects(writeUpgradeSlot(boot, meta, unreadable, { version: "v2", cmdline: "x" }, log), /ENOENT/);
    assert.deepEqual(await currentSlots(boot), {
      default: "A",
      entries: { A: { version: "v1", cmdline: "talos.platform=metal console=ttyS0" } },
    });
    assert.equal(meta.get(MetaTag.upgrade), undefined);
    await onBoot(installed.partitions.BOOT, (dir) => {
      assert.equal(sh("grub-editenv", [path.join(dir, "grub", "grubenv"), "list"]), "");
      assert.deepEqual(
        fs.readdirSync(path.join(dir, "B")).filter((f) => !f.startsWith(".")),
        [],
        "nothing under a final name",
      );
    });
    await assert.rejects(rollbackToOtherSlot(boot, meta), /has no slot B \(never upgraded/);
    await writeUpgradeSlot(
      boot,
      meta,
      v2,
      { version: "v2", cmdline: "talos.platform=metal console=ttyS0 panic=10" },
      log,
    );
    await onBoot(installed.partitions.BOOT, (dir) =>
      assert.deepEqual(fs.readdirSync(path.join(dir, "B")).sort(), ["initramfs.xz", "vmlinuz"]),
    );
    assert.equal(meta.get(MetaTag.upgrade), "A");
  });

  it("a kexec into the new slot takes GRUB's one-time entry away once the kernel is loaded, and leaves it when loading fails", async () => {
    const grubenv = () =>
      onBoot(installed.partitions.BOOT, (dir) => sh("grub-editenv", [path.join(dir, "grub", "grubenv"), "list"]));
    await assert.rejects(
      loadTrialKexec(boot, "B", "c", async () => Promise.reject(new Error("no kexec_file_load"))),
      /no kexec_file_load/,
    );
    assert.equal(await grubenv(), "next_entry=B - Basalt v2\n");
    const loaded: string[] = [];
    await loadTrialKexec(boot, "B", "talos.platform=metal panic=10", async (kernel, initrd, cmdline) => {
      loaded.push(
        fs.readFileSync(kernel, "utf8"),
        String(fs.readFileSync(initrd).equals(fs.readFileSync(v2.initramfs))),
        cmdline,
      );
    });
    assert.deepEqual(loaded, ["kernel two", "true", "BOOT_IMAGE=/B/vmlinuz talos.platform=metal panic=10"]);
    assert.equal(await grubenv(), "");
    await meta.delete(MetaTag.upgrade);
  });

  it("a failed trial (back in A with 0x06 = A) drops slot B from grub.cfg and deletes 0x06", async () => {
    await writeUpgradeSlot(boot, meta, v2, { version: "v3", cmdline: "x" }, log);
    assert.equal(meta.get(MetaTag.upgrade), "A");
    await abandonUpgrade(boot, meta, "A");
    assert.deepEqual(await currentSlots(boot), {
      default: "A",
      entries: { A: { version: "v1", cmdline: "talos.platform=metal console=ttyS0" } },
    });
    assert.equal(meta.get(MetaTag.upgrade), undefined);
    await assert.rejects(rollbackToOtherSlot(boot, meta), /has no slot B \(never upgraded/);
  });
});
