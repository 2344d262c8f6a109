// A platform's disk made from a copy of the metal disk image: the kernel command line in
// BOOT's grub.cfg is the platform's, and the disk takes the platform's size with the backup
// GPT moved to its new end (EPHEMERAL stays as it is: the node grows it at first boot, as
// it does on any disk bigger than the image).

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors.js";
import { writeFileAtomic } from "../sys/atomic-file.js";
import { openBlockTarget } from "../sys/blockdev.js";
import type { Mounter } from "../sys/mount.js";
import { parseBootSlots, renderBootSlots, type BootSlots } from "./bootloader/grub.js";
import { planTable, readGpt, writeGpt } from "./gpt.js";

/** Loop devices over a byte range of an image file. */
export interface LoopDevices {
  attach(file: string, offset: number, sizeBytes: number): Promise<string>;
  detach(device: string): Promise<void>;
}

export interface DiskEditDeps {
  mounter: Mounter;
  loops: LoopDevices;
  /** Where BOOT is mounted while grub.cfg is rewritten. */
  mountDir: string;
}

/** Every boot entry of the slots with `cmdline` in place of its own. */
export function withCmdline(slots: BootSlots, cmdline: string): BootSlots {
  const entries: BootSlots["entries"] = {};
  for (const [label, entry] of Object.entries(slots.entries) as [
    keyof BootSlots["entries"],
    { version: string; cmdline: string },
  ][]) {
    entries[label] = { ...entry, cmdline };
  }
  return { ...slots, entries };
}

/**
 * Rewrites BOOT's grub/grub.cfg in the image file `raw`: every entry boots with what `edit`
 * makes of the default entry's command line. Returns the new command line.
 */
export async function setImageCmdline(
  raw: string,
  edit: (current: string) => string,
  d: DiskEditDeps,
): Promise<string> {
  const disk = await openBlockTarget(raw, { write: false });
  const table = await readGpt(disk).finally(() => disk.close());
  const boot = table?.partitions.find((p) => p.name === "BOOT");
  if (!table || !boot) throw new InvalidInputError(`${raw} has no GPT with a BOOT partition`, { raw });
  const offset = Number(boot.firstLba) * table.sectorSize;
  const size = Number(boot.lastLba - boot.firstLba + 1n) * table.sectorSize;
  const device = await d.loops.attach(raw, offset, size);
  try {
    await fs.mkdir(d.mountDir, { recursive: true });
    await d.mounter.mount(device, d.mountDir, "xfs");
    try {
      const file = path.join(d.mountDir, "grub", "grub.cfg");
      const text = await fs.readFile(file, "utf8");
      const slots = parseBootSlots(text);
      if (!slots) throw new InvalidInputError(`${raw}: BOOT's grub.cfg has no Basalt boot entries`, { raw });
      // The serial terminal lines are the install's choice for the architecture; kept as written.
      const serial = /^serial --unit=0/m.test(text);
      const cmdline = edit(slots.entries[slots.default]!.cmdline);
      await writeFileAtomic(file, renderBootSlots(withCmdline(slots, cmdline), serial), 0o644);
      return cmdline;
    } finally {
      await d.mounter.unmount(d.mountDir);
    }
  } finally {
    await d.loops.detach(device);
  }
}

/**
 * Makes the image file `sizeBytes` long (sparse) with its GPT's backup copy at the new end and
 * the old backup wiped; an image already that big is left alone.
 */
export async function extendImage(raw: string, sizeBytes: number): Promise<void> {
  const before = await openBlockTarget(raw);
  let table;
  try {
    if (before.sizeBytes >= sizeBytes) return;
    table = await readGpt(before);
    if (!table) throw new InvalidInputError(`${raw} has no GPT`, { raw });
    // The old backup: its header in the last sector, its entries in the 32 before.
    const backupBytes = 33 * table.sectorSize;
    await before.write(before.sizeBytes - backupBytes, Buffer.alloc(backupBytes));
    await before.sync();
  } finally {
    await before.close();
  }
  await fs.truncate(raw, sizeBytes);
  const after = await openBlockTarget(raw);
  try {
    await writeGpt(
      after,
      { ...table, lastUsableLba: planTable(sizeBytes, table.sectorSize, []).lastUsableLba },
      { keepBootCode: true },
    );
  } finally {
    await after.close();
  }
}
