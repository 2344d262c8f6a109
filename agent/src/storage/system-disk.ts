import type { BlockSysfs } from "../sys/block.js";
import { partitionPath } from "../sys/blockdev.js";
import type { SystemPartitionName } from "./layout.js";

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
