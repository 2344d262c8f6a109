import { logger } from "../../log.js";
import { MetaStore } from "../../storage/meta.js";
import { findSystemDisk } from "../../storage/system-disk.js";
import { openBlockTarget } from "../../sys/blockdev.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/** Opens META on the system disk and mirrors its keys into MetaKeys resources; a corrupt META is rebuilt, never fatal. */
export async function reloadMeta(r: MachineRuntime): Promise<void> {
  r.systemDisk ??= findSystemDisk(r.block);
  const dev = r.systemDisk?.partitions.META;
  if (!dev) {
    log.warn("no META partition on the system disk");
    return;
  }
  await r.meta?.close();
  r.meta = await MetaStore.open(await openBlockTarget(dev));
  r.metaChanged();
}
