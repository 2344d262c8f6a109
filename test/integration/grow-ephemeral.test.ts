// EPHEMERAL growing to the disk's end on a loop device: a disk image's layout on a
// file that is then made bigger, partitions made known to the kernel with BLKPG (addpart;
// this host's kernel scans no partition tables), EPHEMERAL formatted and mounted as /var is
// when the node grows it. Read back: the kernel's partition size, the GPT, the filesystem's size.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { logger } from "../../agent/src/log.js";
import type { MachineRuntime } from "../../agent/src/machined/runtime.js";
import { growEphemeralFilesystem, growEphemeralPartition } from "../../agent/src/machined/tasks/grow.js";
import { planTable, readGpt, writeGpt } from "../../agent/src/storage/gpt.js";
import { systemLayout } from "../../agent/src/storage/layout.js";
import { mountSystemVolume } from "../../agent/src/storage/volumes.js";
import { sysfsBlock } from "../../agent/src/sys/block.js";
import { openBlockTarget } from "../../agent/src/sys/blockdev.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const canRun =
  process.getuid?.() === 0 &&
  fs.existsSync("/dev/loop-control") &&
  (() => {
    try {
      sh("which", ["addpart", "resizepart", "mkfs.xfs", "xfs_growfs", "fsfreeze"]);
      return true;
    } catch {
      return false;
    }
  })();
const MiB = 1024 * 1024;
const work = fs.mkdtempSync(path.join(os.tmpdir(), `basalt-grow-${process.pid}-`));
const mounter = systemMounter();
let loop = "";

after(async () => {
  if (mounter.list().some((m) => m.target === path.join(work, "var"))) await mounter.unmount(path.join(work, "var"));
  if (loop) sh("losetup", ["-d", loop]);
  fs.rmSync(work, { recursive: true, force: true });
});

test("EPHEMERAL is grown to the end of an enlarged disk: GPT, kernel partition and xfs", {
  skip: canRun ? false : "needs root, loop devices, addpart, resizepart, fsfreeze, xfsprogs",
}, async () => {
  const file = path.join(work, "disk.img");
  fs.writeFileSync(file, "");
  fs.truncateSync(file, 1400 * MiB);
  let dev = await openBlockTarget(file);
  const table = planTable(dev.sizeBytes, 512, systemLayout());
  await writeGpt(dev, table);
  await dev.close();
  fs.truncateSync(file, 3000 * MiB);
  loop = sh("losetup", ["-fP", "--show", file]).trim();
  for (const [i, p] of table.partitions.entries())
    sh("addpart", [loop, String(i + 1), String(p.firstLba), String(p.lastLba - p.firstLba + 1n)]);
  const name = path.basename(loop);
  const ephemeral = `${loop}p6`;
  const varDir = path.join(work, "var");

  const r = {
    systemDisk: { disk: loop, partitions: { EPHEMERAL: ephemeral } },
    block: sysfsBlock(),
    paths: { var: varDir },
  } as unknown as MachineRuntime; // what the grow tasks read
  const before = await mountSystemVolume("EPHEMERAL", ephemeral, varDir, mounter, logger("test"));
  assert.equal(before.formatted, true);
  const smallFs = fs.statfsSync(varDir);
  await mounter.unmount(varDir);

  await growEphemeralPartition(r);
  const end = (3000 * MiB) / 512 - 34;
  const first = Number(table.partitions[5]!.firstLba);
  assert.equal(Number(fs.readFileSync(`/sys/block/${name}/${name}p6/size`, "utf8")), end - first + 1);
  dev = await openBlockTarget(loop);
  assert.equal((await readGpt(dev))?.partitions[5]?.lastLba, BigInt(end));
  await dev.close();

  await mountSystemVolume("EPHEMERAL", ephemeral, varDir, mounter, logger("test"));
  await growEphemeralFilesystem(r);
  const grownFs = fs.statfsSync(varDir);
  assert.equal(grownFs.bsize, smallFs.bsize);
  // xfs_info's data block count is the source of truth for the grown filesystem.
  const dataBlocks = Number(/^data\s+=\s+bsize=\d+\s+blocks=(\d+)/m.exec(sh("xfs_info", [varDir]))?.[1]);
  assert.equal(dataBlocks, Math.floor(((end - first + 1) * 512) / grownFs.bsize));
  // The superblock on the device (read past every cache) already holds the new size while mounted, so a
  // power loss now needs no replay of the growth from the log.
  const onDisk = execFileSync("dd", [`if=${ephemeral}`, "bs=4096", "count=1", "iflag=direct", "status=none"]);
  assert.equal(onDisk.subarray(0, 4).toString("latin1"), "XFSB");
  assert.equal(Number(onDisk.readBigUInt64BE(8)), dataBlocks);
  await mounter.unmount(varDir);
  // Nothing more to grow on the next boot.
  await growEphemeralPartition(r);
});
