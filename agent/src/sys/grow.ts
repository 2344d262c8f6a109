import { statfs } from "node:fs/promises";
import { runTool } from "./exec.js";

/**
 * Grows the xfs filesystem mounted at `target` to its device's size (nothing when it fills it already).
 * After a growth the filesystem is frozen and thawed, which writes the new superblock in place and
 * leaves a clean log: Linux 6.1's log recovery checks replayed buffers against the superblock's old
 * size, so a power loss before the growth left the log made the mount fail ("Structure needs cleaning").
 */
export async function growXfs(target: string): Promise<void> {
  const before = (await statfs(target)).blocks;
  await runTool("xfs_growfs", ["-d", target]);
  if ((await statfs(target)).blocks === before) return;
  await runTool("fsfreeze", ["--freeze", target]);
  await runTool("fsfreeze", ["--unfreeze", target]);
}

/**
 * Tells the kernel a partition's new length in 512-byte sectors (BLKPG resize through util-linux's
 * resizepart): the other partitions stay as they are (a re-read would drop their GPT names while
 * some are busy).
 */
export async function resizeKernelPartition(disk: string, number: number, sectors: number): Promise<void> {
  await runTool("resizepart", [disk, String(number), String(sectors)]);
}
