import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError } from "../errors.js";
import type { BlockSysfs } from "../sys/block.js";
import { partitionPath } from "../sys/blockdev.js";
import { systemLayout, type SystemPartitionName } from "./layout.js";

export interface SystemDisk {
  /** e.g. /dev/vda */
  disk: string;
  partitions: Partial<Record<SystemPartitionName, string>>;
}

const names = new Set<string>(["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"]);

/** The disk whose partitions carry the system names, found by GPT name as Talos does (PARTNAME in sysfs). */
export function findSystemDisk(block: BlockSysfs): SystemDisk | undefined {
  for (const dev of block.devices()) {
    if (/^(loop|ram|zram|sr|fd)/.test(dev)) continue;
    const partitions: SystemDisk["partitions"] = {};
    for (let n = 1; n <= 16; n++) {
      const part = partitionPath(dev, n);
      const uevent = block.attr(dev, `${part}/uevent`);
      if (uevent === undefined) continue;
      const name = /^PARTNAME=(.*)$/m.exec(uevent)?.[1];
      if (name && names.has(name)) partitions[name as SystemPartitionName] = `/dev/${part}`;
    }
    if (partitions.STATE || partitions.META) return { disk: `/dev/${dev}`, partitions };
  }
  return undefined;
}

export interface AwaitSystemDiskOptions {
  /** Waits until udevd has handled every pending device event (a no-op without udevd). */
  settle: () => Promise<void>;
  timeoutMs?: number;
  /** Whether a device node exists (the real /dev unless a test says otherwise). */
  deviceExists?: (dev: string) => boolean;
}

/**
 * The freshly installed system disk, once the kernel shows every partition of the layout with its
 * device node. udevd re-reads the partition table of a disk whose writer just closed it (its
 * "watch" option), removing and adding every partition, so a look straight after the install can
 * find none of them (seen in the install journey under load: "the system disk has no STATE partition").
 */
export async function awaitSystemDisk(block: BlockSysfs, opts: AwaitSystemDiskOptions): Promise<SystemDisk> {
  const expected = systemLayout().map((p) => p.name);
  const exists = opts.deviceExists ?? existsSync;
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    await opts.settle();
    const found = findSystemDisk(block);
    const missing = expected.filter((n) => !found?.partitions[n] || !exists(found.partitions[n]));
    if (found && missing.length === 0) return found;
    if (Date.now() > deadline) throw new NotFoundError(`the installed system disk does not show the partitions ${missing.join(", ")}`, { disk: found?.disk, missing });
    await sleep(250);
  }
}
