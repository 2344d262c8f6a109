// Wiping the system disk: at boot when `talos.experimental.wipe=` asks for it (the
// GRUB reset entry does), and in the reset sequence.

import { InvalidInputError } from "../../errors.js";
import { logger } from "../../log.js";
import { findSystemDisk } from "../../storage/system-disk.js";
import { wipeVolume } from "../../storage/volumes.js";
import { openBlockTarget } from "../../sys/blockdev.js";
import { wipeDiskHeads } from "../../storage/wipe.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/** What `talos.experimental.wipe=system` or `=system:LABEL,...` asks for; undefined when absent. */
export function wipeRequest(cmdline: Map<string, string[]>): { labels: string[] } | undefined {
  const value = cmdline.get("talos.experimental.wipe")?.at(-1);
  if (value === undefined) return undefined;
  const [what, labels = ""] = value.split(":");
  if (what !== "system") throw new InvalidInputError(`unsupported talos.experimental.wipe=${value}`);
  return { labels: labels.split(",").filter(Boolean) };
}

/** Wipes the named system partitions (their signatures: the next mount formats them), or the whole disk's tables. */
export async function wipeSystemPartitions(r: MachineRuntime, labels: readonly string[]): Promise<void> {
  r.systemDisk ??= findSystemDisk(r.block);
  const disk = r.systemDisk;
  if (!disk) {
    log.warn("nothing to wipe: no system disk");
    return;
  }
  if (labels.length === 0) {
    const dev = await openBlockTarget(disk.disk);
    try {
      await wipeDiskHeads(dev);
    } finally {
      await dev.close();
    }
    log.info("system disk wiped", { disk: disk.disk });
    r.systemDisk = undefined;
    return;
  }
  for (const label of labels) {
    const dev = disk.partitions[label as keyof typeof disk.partitions];
    if (!dev || !["STATE", "EPHEMERAL", "META"].includes(label))
      throw new InvalidInputError(`partition ${label} can't be wiped`, { label });
    await wipeVolume(dev);
    log.info("partition wiped", { label, device: dev });
  }
}

export async function wipeSystemDiskAtBoot(r: MachineRuntime): Promise<void> {
  const req = wipeRequest(r.cmdline);
  if (req) await wipeSystemPartitions(r, req.labels);
}

/** Clears whole user disks' partition tables and signatures (Talos's FastWipe of each). */
export async function wipeUserDisks(devices: readonly string[]): Promise<void> {
  for (const device of devices) {
    const dev = await openBlockTarget(device);
    try {
      log.info("wiping user disk", { device });
      await wipeDiskHeads(dev);
    } finally {
      await dev.close();
    }
  }
}
