// Clearing what a disk held before an install: partition tables (an MBR, both
// copies of a GPT) and filesystem signatures, so neither the kernel, blkid nor
// our own first-mount check mistakes a leftover for part of the new install.

import type { BlockTarget } from "../sys/blockdev.js";
import type { GptTable } from "./gpt.js";

const MiB = 1024 * 1024;

async function zero(dev: BlockTarget, offset: number, length: number): Promise<void> {
  const start = Math.max(0, offset);
  const end = Math.min(dev.sizeBytes, offset + length);
  const chunk = Buffer.alloc(Math.min(MiB, Math.max(0, end - start)));
  for (let at = start; at < end; at += chunk.length)
    await dev.write(at, chunk.subarray(0, Math.min(chunk.length, end - at)));
}

/**
 * The first and last MiB of the disk: the MBR and boot code, the primary and backup
 * GPT, and every common superblock of a filesystem that started at the disk's start
 * (xfs, ext4, vfat at 0-1 KiB, iso9660 at 32 KiB, btrfs at 64 KiB).
 */
export async function wipeDiskHeads(dev: BlockTarget): Promise<void> {
  await zero(dev, 0, MiB);
  await zero(dev, dev.sizeBytes - MiB, MiB);
  await dev.sync();
}

/**
 * The first and last MiB of every partition of the new table: a filesystem of an
 * earlier install (or another OS) that started where a new partition starts would
 * otherwise be found again by blkid, and md/ZFS labels live at a partition's end.
 */
export async function wipePartitionHeads(dev: BlockTarget, table: GptTable): Promise<void> {
  for (const p of table.partitions) {
    const start = Number(p.firstLba) * table.sectorSize;
    const size = Number(p.lastLba - p.firstLba + 1n) * table.sectorSize;
    await zero(dev, start, Math.min(size, MiB));
    if (size > MiB) await zero(dev, start + size - MiB, MiB);
  }
  await dev.sync();
}
