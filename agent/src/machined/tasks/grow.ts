// EPHEMERAL takes the rest of the system disk: a disk image written to a bigger disk (or a
// disk enlarged later) grows it before it is mounted, and its filesystem once mounted.

import { setTimeout as sleep } from "node:timers/promises";
import { SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { growLastPartition } from "../../storage/grow.js";
import { openBlockTarget, partitionPath, rereadPartitionTable } from "../../sys/blockdev.js";
import { growXfs } from "../../sys/growfs.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

export async function growEphemeralPartition(r: MachineRuntime): Promise<void> {
  const disk = r.systemDisk?.disk;
  if (!disk) return;
  const dev = await openBlockTarget(disk);
  let result;
  try {
    result = await growLastPartition(dev, "EPHEMERAL");
  } finally {
    await dev.close();
  }
  if (!result?.grown) return;
  // STATE is mounted: the kernel takes the new size through partx (BLKPG), not a whole re-read.
  await rereadPartitionTable(disk);
  const name = disk.replace(/^\/dev\//, "");
  const part = partitionPath(name, result.number);
  for (let i = 0; i < 50; i++) {
    const sectors = Number(r.block.attr(name, `${part}/size`) ?? "0");
    const start = Number(r.block.attr(name, `${part}/start`) ?? "0");
    if (start > 0 && start + sectors - 1 === Number(result.lastLba)) {
      log.info("EPHEMERAL grown to the end of the disk", { disk, partition: `/dev/${part}`, bytes: sectors * 512 });
      return;
    }
    await sleep(100);
  }
  throw new SystemError(`the kernel did not take EPHEMERAL's new size`, { disk, partition: part });
}

/** After EPHEMERAL is mounted: its filesystem fills the partition (also after a grow a power loss cut short). */
export async function growEphemeralFilesystem(r: MachineRuntime): Promise<void> {
  await growXfs(r.paths.var);
}
