// EPHEMERAL takes the rest of the system disk: a disk image written to a bigger disk (or a
// disk enlarged later) grows it before it is mounted, and its filesystem once mounted.

import { setTimeout as sleep } from "node:timers/promises";
import { SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { growLastPartition } from "../../storage/grow.js";
import { openBlockTarget, partitionPath } from "../../sys/blockdev.js";
import { growXfs, resizeKernelPartition } from "../../sys/grow.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

export async function growEphemeralPartition(r: MachineRuntime): Promise<void> {
  const disk = r.systemDisk?.disk;
  if (!disk) return;
  const dev = await openBlockTarget(disk);
  let result;
  // sysfs counts 512-byte sectors, the GPT the disk's logical ones.
  const per = dev.sectorSize / 512;
  try {
    result = await growLastPartition(dev, "EPHEMERAL");
  } finally {
    await dev.close();
  }
  if (!result?.grown) return;
  const end = (Number(result.lastLba) + 1) * per - 1;
  const name = disk.replace(/^\/dev\//, "");
  const part = partitionPath(name, result.number);
  const start = Number(r.block.attr(name, `${part}/start`) ?? "0");
  if (start === 0) throw new SystemError("EPHEMERAL's start is unknown to the kernel", { disk, partition: part });
  // STATE is mounted and META open: only EPHEMERAL's size changes in the kernel, not the whole table.
  await resizeKernelPartition(disk, result.number, end - start + 1);
  for (let i = 0; i < 50; i++) {
    const sectors = Number(r.block.attr(name, `${part}/size`) ?? "0");
    if (start + sectors - 1 === end) {
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
