// Growing the last partition of the system disk (EPHEMERAL) to the disk's end: a disk
// image is smaller than the disk it is written to, and a VM's disk may be enlarged later.

import type { BlockTarget } from "../sys/blockdev.js";
import { planTable, readGpt, writeGpt } from "./gpt.js";

export interface GrowResult {
  /** The partition's 1-based number. */
  number: number;
  grown: boolean;
  lastLba: bigint;
}

/**
 * Moves the backup GPT to the disk's end and extends the partition `name` to the last
 * usable sector, keeping GRUB's boot code in the MBR. Only the last partition can grow;
 * undefined when the disk has no GPT or `name` is not its last partition.
 */
export async function growLastPartition(dev: BlockTarget, name: string): Promise<GrowResult | undefined> {
  const table = await readGpt(dev);
  const last = table?.partitions.at(-1);
  if (!table || !last || last.name !== name) return undefined;
  const number = table.partitions.length;
  const end = planTable(dev.sizeBytes, table.sectorSize, []).lastUsableLba;
  if (last.lastLba >= end && table.lastUsableLba === end) return { number, grown: false, lastLba: last.lastLba };
  last.lastLba = end;
  await writeGpt(dev, { ...table, lastUsableLba: end }, { keepBootCode: true });
  return { number, grown: true, lastLba: end };
}
