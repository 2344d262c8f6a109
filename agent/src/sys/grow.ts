import { runTool } from "./exec.js";

/** Grows the xfs filesystem mounted at `target` to its device's size (nothing when it fills it already). */
export async function growXfs(target: string): Promise<void> {
  await runTool("xfs_growfs", ["-d", target]);
}

/**
 * Tells the kernel a partition's new length in 512-byte sectors (BLKPG resize through util-linux's
 * resizepart): the other partitions stay as they are (a re-read would drop their GPT names while
 * some are busy).
 */
export async function resizeKernelPartition(disk: string, number: number, sectors: number): Promise<void> {
  await runTool("resizepart", [disk, String(number), String(sectors)]);
}
