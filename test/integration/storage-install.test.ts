// Install to disk onto loop devices of sparse files, over each kind of leftover a
// user's disk may hold, then read the result back with util-linux and mount it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { logger } from "../../agent/src/log.js";
import type { GptTable } from "../../agent/src/storage/gpt.js";
import { installToDisk, locateInstallSource } from "../../agent/src/storage/install.js";
import { NotFoundError } from "../../agent/src/errors.js";
import { MetaStore } from "../../agent/src/storage/meta.js";
import { mountSystemVolume, wipeVolume } from "../../agent/src/storage/volumes.js";
import { openBlockTarget } from "../../agent/src/sys/blockdev.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8" });
const canRun =
  process.getuid?.() === 0 &&
  fs.existsSync("/dev/loop-control") &&
  (() => {
    try {
      sh("which", ["grub-install", "mkfs.xfs", "mkfs.vfat", "sfdisk", "mcopy"]);
      return true;
    } catch {
      return false;
    }
  })();

const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-install-"));
const loops: string[] = [];
const mounter = systemMounter();
const log = logger("test");

function loopDisk(name: string, prepare?: (file: string) => void): string {
  const file = path.join(work, `${name}.img`);
  fs.writeFileSync(file, "");
  fs.truncateSync(file, 6 * 1024 ** 3);
  prepare?.(file);
  const loop = sh("losetup", ["-fP", "--show", file]).trim();
  loops.push(loop);
  return loop;
}

const source = { kernel: path.join(work, "vmlinuz"), initramfs: path.join(work, "initramfs.xz") };

// This host's kernel parses no partition tables, so each partition is attached as a loop device of its own range.
async function loopPartitions(disk: string, table: GptTable): Promise<string[]> {
  return table.partitions.map((p) => {
    const offset = Number(p.firstLba) * table.sectorSize;
    const size = Number(p.lastLba - p.firstLba + 1n) * table.sectorSize;
    const loop = sh("losetup", ["-f", "--show", "-o", String(offset), "--sizelimit", String(size), disk]).trim();
    loops.unshift(loop);
    return loop;
  });
}

async function install(disk: string) {
  return installToDisk({
    disk,
    source,
    cmdline: "talos.platform=metal console=ttyS0",
    version: "v0.1.0-test",
    arch: "amd64",
    workDir: path.join(work, `mnt-${path.basename(disk)}`),
    mounter,
    log,
    attachPartitions: loopPartitions,
  });
}

function dump(disk: string) {
  return JSON.parse(sh("sfdisk", ["--json", disk])) as { partitiontable: { partitions: { name: string }[] } };
}

async function withMounted<T>(dev: string, fstype: string, fn: (dir: string) => T): Promise<T> {
  const dir = fs.mkdtempSync(path.join(work, "m-"));
  await mounter.mount(dev, dir, fstype, ["ro"]);
  try {
    return fn(dir);
  } finally {
    await mounter.unmount(dir);
  }
}

describe("install to disk", {
  skip: canRun ? false : "needs root, loop devices, grub-install, mkfs.xfs, mkfs.vfat",
}, () => {
  before(() => {
    fs.writeFileSync(source.kernel, "kernel image bytes");
    fs.writeFileSync(source.initramfs, Buffer.alloc(3 * 1024 * 1024, 7));
  });
  after(() => {
    for (const l of loops) {
      try {
        sh("losetup", ["-d", l]);
      } catch {
        // already detached
      }
    }
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("installs a blank disk: layout, filesystems, kernel and initramfs on BOOT/A, GRUB for BIOS and UEFI, META", async () => {
    const disk = loopDisk("blank");
    const installed = await install(disk);
    assert.deepEqual(
      dump(disk).partitiontable.partitions.map((p) => p.name),
      ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"],
    );
    assert.equal(sh("blkid", ["-p", "-o", "value", "-s", "LABEL", installed.partitions.EFI]).trim(), "EFI");
    assert.equal(sh("blkid", ["-p", "-o", "value", "-s", "TYPE", installed.partitions.BOOT]).trim(), "xfs");
    for (const blank of [installed.partitions.STATE, installed.partitions.EPHEMERAL]) {
      assert.throws(() => sh("blkid", ["-p", blank]), "STATE and EPHEMERAL are left blank for the first mount");
    }
    await withMounted(installed.partitions.BOOT, "xfs", (dir) => {
      assert.equal(fs.readFileSync(path.join(dir, "A", "vmlinuz"), "utf8"), "kernel image bytes");
      assert.equal(fs.statSync(path.join(dir, "A", "initramfs.xz")).size, 3 * 1024 * 1024);
      const cfg = fs.readFileSync(path.join(dir, "grub", "grub.cfg"), "utf8");
      assert.match(cfg, /set default="A - Basalt v0.1.0-test"/);
      assert.match(cfg, /linux \/A\/vmlinuz talos.platform=metal console=ttyS0\n/);
      assert.match(
        cfg,
        /menuentry "Reset Basalt installation and return to maintenance mode"[^}]*talos.experimental.wipe=system:EPHEMERAL,STATE/,
      );
      assert.ok(fs.existsSync(path.join(dir, "grub", "i386-pc", "normal.mod")), "BIOS modules");
      assert.ok(fs.existsSync(path.join(dir, "grub", "x86_64-efi", "normal.mod")), "UEFI modules");
    });
    // mtools reads the EFI partition without mounting it (this host's kernel has no vfat).
    assert.match(sh("mdir", ["-b", "-i", installed.partitions.EFI, "::/EFI/BOOT"]), /BOOTX64\.EFI/);
    const head = Buffer.alloc(512);
    const fd = fs.openSync(installed.partitions.BIOS, "r");
    fs.readSync(fd, head, 0, 512, 0);
    fs.closeSync(fd);
    assert.ok(
      head.some((b) => b !== 0),
      "GRUB's core image is in the BIOS boot partition",
    );
    const mbr = Buffer.alloc(512);
    const dfd = fs.openSync(disk, "r");
    fs.readSync(dfd, mbr, 0, 512, 0);
    fs.closeSync(dfd);
    assert.ok(
      mbr.subarray(0, 440).some((b) => b !== 0),
      "boot code in the MBR",
    );
    assert.equal(mbr[450], 0xee, "the protective MBR entry survives grub-install");
    const meta = await MetaStore.open(await openBlockTarget(installed.partitions.META));
    assert.equal(meta.keys().size, 0);
    await meta.close();

    const target = path.join(work, "state");
    const first = await mountSystemVolume("STATE", installed.partitions.STATE, target, mounter, log);
    assert.equal(first.formatted, true);
    fs.writeFileSync(path.join(target, "config.yaml"), "kept");
    await mounter.unmount(target);
    const second = await mountSystemVolume("STATE", installed.partitions.STATE, target, mounter, log);
    assert.equal(second.formatted, false);
    assert.equal(fs.readFileSync(path.join(target, "config.yaml"), "utf8"), "kept");
    // Mounted again while mounted (a restarted machined): kept as it is, not mounted twice.
    const again = await mountSystemVolume("STATE", installed.partitions.STATE, target, mounter, log);
    assert.equal(again.formatted, false);
    assert.equal(mounter.list().filter((m) => m.target === target).length, 1);
    await mounter.unmount(target);
    await wipeVolume(installed.partitions.STATE);
    const third = await mountSystemVolume("STATE", installed.partitions.STATE, target, mounter, log);
    assert.equal(third.formatted, true, "a wiped volume is formatted again");
    assert.equal(fs.existsSync(path.join(target, "config.yaml")), false);
    await mounter.unmount(target);
  });

  const MiB = 1024 * 1024;
  // A filesystem made inside the image at a byte offset, through a loop device of that range.
  const mkfsAt = (file: string, offsetMiB: number, sizeMiB: number, mkfs: string[]) => {
    const loop = sh("losetup", [
      "-f",
      "--show",
      "-o",
      String(offsetMiB * MiB),
      "--sizelimit",
      String(sizeMiB * MiB),
      file,
    ]).trim();
    try {
      sh(mkfs[0]!, [...mkfs.slice(1), loop]);
    } finally {
      sh("losetup", ["-d", loop]);
    }
  };
  const leftovers: [string, (file: string) => void][] = [
    [
      "an MBR table with an ext4 partition",
      (file) => {
        execFileSync("sfdisk", ["-q", "-X", "dos", file], { input: ",2G,83\n,,83\n" });
        sh("mkfs.ext4", ["-q", "-F", "-E", `offset=${1024 * 1024}`, file, "1G"]);
      },
    ],
    [
      "a GPT whose primary copy is damaged (only the backup is valid)",
      (file) => {
        execFileSync("sfdisk", ["-q", "-X", "gpt", file], { input: ",1G\n,2G\n" });
        const fd = fs.openSync(file, "r+");
        fs.writeSync(fd, Buffer.alloc(512, 0x55), 0, 512, 512);
        fs.closeSync(fd);
      },
    ],
    // STATE starts at 1103 MiB and EPHEMERAL at 1203 MiB: an old install's filesystems there must not survive.
    [
      "another Linux: a GPT with vfat and xfs filesystems where STATE and EPHEMERAL now start",
      (file) => {
        execFileSync("sfdisk", ["-q", "-X", "gpt", file], {
          input: "start=1103MiB,size=100MiB,type=uefi\nstart=1203MiB,size=1024MiB\n",
        });
        mkfsAt(file, 1103, 100, ["mkfs.vfat", "-F", "32", "-n", "OLDESP"]);
        mkfsAt(file, 1203, 1024, ["mkfs.xfs", "-q", "-f", "-L", "OLDROOT"]);
      },
    ],
    [
      "a whole-disk xfs filesystem (no partition table)",
      (file) => {
        sh("mkfs.xfs", ["-q", "-f", "-L", "WHOLE", file]);
      },
    ],
    [
      "another OS: an ISO image written to the whole disk",
      (file) => {
        const fd = fs.openSync(file, "r+");
        const pvd = Buffer.alloc(2048);
        pvd[0] = 1;
        pvd.write("CD001", 1, "ascii");
        fs.writeSync(fd, pvd, 0, pvd.length, 32768);
        fs.closeSync(fd);
      },
    ],
  ];
  // The kinds of signature wipefs finds, each once (it lists every copy: FAT32's backup boot sectors, GPT's backup header).
  const signatures = (dev: string) =>
    [
      ...new Set(
        sh("wipefs", ["-n", "-O", "TYPE", "--noheadings", dev])
          .split("\n")
          .map((t) => t.trim())
          .filter(Boolean),
      ),
    ].sort();
  for (const [what, prepare] of leftovers) {
    it(`installs over ${what}`, async () => {
      const disk = loopDisk(what.replace(/\W+/g, "-"), prepare);
      const installed = await install(disk);
      const dumped = sh("sfdisk", ["--dump", disk]);
      assert.deepEqual(
        [...dumped.matchAll(/name="([^"]+)"/g)].map((m) => m[1]),
        ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"],
      );
      assert.deepEqual(signatures(disk), ["PMBR", "gpt"], "only our table on the disk itself");
      assert.match(
        sh("sfdisk", ["--verify", disk]),
        /No errors detected/,
        "both GPT copies and the protective MBR are sound",
      );
      assert.deepEqual(signatures(installed.partitions.EFI), ["vfat"]);
      assert.deepEqual(signatures(installed.partitions.BOOT), ["xfs"]);
      for (const blank of [installed.partitions.META, installed.partitions.STATE, installed.partitions.EPHEMERAL]) {
        assert.deepEqual(signatures(blank), [], `no leftover signature on ${blank}`);
      }
      assert.equal(sh("blkid", ["-p", "-o", "value", "-s", "LABEL", installed.partitions.BOOT]).trim(), "BOOT");
    });
  }

  it("locateInstallSource says clearly when no boot medium is attached", {
    skip: (() => {
      try {
        sh("blkid", ["-L", "BASALT"]);
        return "a BASALT medium is attached to this host";
      } catch {
        return false;
      }
    })(),
  }, async () => {
    await assert.rejects(
      locateInstallSource(mounter, path.join(work, "medium")),
      (e: unknown) => e instanceof NotFoundError && /no boot medium labelled BASALT/.test(e.message),
    );
  });

  it("installs over a half-written earlier install", async () => {
    const disk = loopDisk("half-written");
    const first = await install(disk);
    // Simulate a crash during the earlier install: BOOT's filesystem header torn.
    const fd = fs.openSync(first.partitions.BOOT, "r+");
    fs.writeSync(fd, Buffer.alloc(4096, 0x11), 0, 4096, 0);
    fs.closeSync(fd);
    const second = await install(disk);
    assert.equal(sh("blkid", ["-p", "-o", "value", "-s", "TYPE", second.partitions.BOOT]).trim(), "xfs");
    await withMounted(second.partitions.BOOT, "xfs", (dir) => assert.ok(fs.existsSync(path.join(dir, "A", "vmlinuz"))));
  });
});
