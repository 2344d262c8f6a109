// BOOT's A/B slots on disk: an upgrade writes the other slot and asks GRUB to try it
// once; the tried system confirms itself, or the node is back in the last good slot.
// Every step leaves a bootable disk whatever moment the power goes: grub.cfg forgets the
// slot before its files are rewritten, the new files are renamed into place and made
// durable before META 0x06 records the upgrade, grub.cfg names the slot and grubenv asks
// for it last, and grub.cfg's default stays the old slot until the new one is confirmed.

import { promises as fs } from "node:fs";
import path from "node:path";
import { ConflictError, NotFoundError } from "../errors.js";
import type { Logger } from "../log.js";
import { readFileIfExists, writeFileAtomic } from "../sys/atomic-file.js";
import type { Mounter } from "../sys/mount.js";
import {
  grubenvFile,
  parseBootSlots,
  renderBootSlots,
  renderGrubenv,
  type BootLabel,
  type BootSlots,
  type GrubArch,
  type GrubEntry,
} from "./bootloader/grub.js";
import { MetaTag, type MetaStore } from "./meta.js";
import {
  abandonSlots,
  confirmSlots,
  planUpgrade,
  rollbackSlots,
  withoutSlot,
  type UpgradePlan,
} from "./upgrade-slots.js";

export interface BootPartition {
  device: string;
  mounter: Mounter;
  /** Where BOOT is mounted while it is changed. */
  mountDir: string;
  arch: GrubArch;
}

async function withBoot<T>(boot: BootPartition, fn: (dir: string) => Promise<T>): Promise<T> {
  await fs.mkdir(boot.mountDir, { recursive: true });
  await boot.mounter.mount(boot.device, boot.mountDir, "xfs");
  try {
    return await fn(boot.mountDir);
  } finally {
    await boot.mounter.unmount(boot.mountDir);
  }
}

async function readSlots(dir: string): Promise<BootSlots> {
  const text = await readFileIfExists(path.join(dir, "grub", "grub.cfg"));
  const slots = text ? parseBootSlots(text.toString("utf8")) : undefined;
  if (!slots) throw new NotFoundError("BOOT has no grub.cfg written by an install: the node is not installed", {});
  return slots;
}

async function writeSlots(
  dir: string,
  slots: BootSlots,
  arch: GrubArch,
  once: Record<string, string> = {},
): Promise<void> {
  await writeFileAtomic(path.join(dir, "grub", "grub.cfg"), renderBootSlots(slots, arch === "amd64"), 0o644);
  await writeFileAtomic(path.join(dir, "grub", grubenvFile), renderGrubenv(once), 0o644);
}

async function syncPath(p: string): Promise<void> {
  const fh = await fs.open(p, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Copies each file to a temporary beside its target, makes it durable, then renames them all into place. */
async function copyIntoSlot(slotDir: string, files: { from: string; name: string }[]): Promise<void> {
  for (const f of files) {
    const tmp = path.join(slotDir, `.${f.name}.new`);
    await fs.copyFile(f.from, tmp);
    await syncPath(tmp);
  }
  for (const f of files) await fs.rename(path.join(slotDir, `.${f.name}.new`), path.join(slotDir, f.name));
  await syncPath(slotDir);
}

/** The slots as grub.cfg has them now. */
export function currentSlots(boot: BootPartition): Promise<BootSlots> {
  return withBoot(boot, readSlots);
}

/**
 * Writes `source` into the slot the node is not running, records the running slot in
 * META 0x06, and makes the new slot GRUB's one-time entry (the default stays).
 */
export async function writeUpgradeSlot(
  boot: BootPartition,
  meta: MetaStore,
  source: { kernel: string; initramfs: string },
  entry: GrubEntry,
  log: Logger,
): Promise<UpgradePlan> {
  // GRUB reads xfs without replaying its log: grub.cfg without the slot is unmounted (the log clean, every
  // change in place) before the slot's files are touched, so a power loss in the copy leaves GRUB that grub.cfg.
  const plan = await withBoot(boot, async (dir) => {
    const current = await readSlots(dir);
    const planned = planUpgrade(current, entry);
    if (current.entries[planned.target]) await writeSlots(dir, withoutSlot(current, planned.target), boot.arch);
    return planned;
  });
  return withBoot(boot, async (dir) => {
    const slotDir = path.join(dir, plan.target);
    // Whatever an earlier write left there (a power loss mid-write) goes with the slot's old system.
    await fs.rm(slotDir, { recursive: true, force: true });
    await fs.mkdir(slotDir, { recursive: true });
    log.info("writing the new system into its slot", { slot: plan.target, version: entry.version });
    await copyIntoSlot(slotDir, [
      { from: source.kernel, name: "vmlinuz" },
      { from: source.initramfs, name: "initramfs.xz" },
    ]);
    log.info("new system written to its slot", { slot: plan.target, version: entry.version });
    await meta.set(MetaTag.upgrade, plan.previous);
    await writeSlots(dir, plan.slots, boot.arch, { next_entry: plan.nextEntry });
    log.info("GRUB boots the new slot once; the default stays the running one until the new system is ready", {
      target: plan.target,
      previous: plan.previous,
    });
    return plan;
  });
}

/**
 * Hands the new slot's kernel to `load` (kexec_file_load) and, once it is loaded, clears GRUB's
 * one-time entry: the kexec is the new system's one try. Throws what `load` threw, the entry kept.
 */
export async function loadTrialKexec(
  boot: BootPartition,
  target: BootLabel,
  cmdline: string,
  load: (kernel: string, initrd: string, cmdline: string) => Promise<void>,
): Promise<void> {
  await withBoot(boot, async (dir) => {
    await load(
      path.join(dir, target, "vmlinuz"),
      path.join(dir, target, "initramfs.xz"),
      `BOOT_IMAGE=/${target}/vmlinuz ${cmdline}`,
    );
    await clearOnceIn(dir);
  });
}

/** Clears GRUB's one-time entry (a trial system that started must not be tried again after a failure). */
export async function clearOnce(boot: BootPartition): Promise<void> {
  await withBoot(boot, clearOnceIn);
}

function clearOnceIn(dir: string): Promise<void> {
  return writeFileAtomic(path.join(dir, "grub", grubenvFile), renderGrubenv({}), 0o644);
}

/** The new slot reached Running and ready: it becomes the default, 0x06 goes. */
export async function confirmUpgrade(boot: BootPartition, meta: MetaStore, booted: BootLabel): Promise<BootSlots> {
  const slots = await withBoot(boot, async (dir) => {
    const next = confirmSlots(await readSlots(dir), booted);
    await writeSlots(dir, next, boot.arch);
    return next;
  });
  await meta.delete(MetaTag.upgrade);
  return slots;
}

/** Back in the old slot after a failed trial: grub.cfg forgets the failed slot, 0x06 goes. */
export async function abandonUpgrade(boot: BootPartition, meta: MetaStore, booted: BootLabel): Promise<void> {
  await withBoot(boot, async (dir) => writeSlots(dir, abandonSlots(await readSlots(dir), booted), boot.arch));
  await meta.delete(MetaTag.upgrade);
}

/** Makes the other slot the default (the Rollback RPC); refuses when it has no kernel and initramfs. */
export async function rollbackToOtherSlot(boot: BootPartition, meta: MetaStore): Promise<BootSlots> {
  const slots = await withBoot(boot, async (dir) => {
    const next = rollbackSlots(await readSlots(dir));
    for (const f of ["vmlinuz", "initramfs.xz"]) {
      await fs.access(path.join(dir, next.default, f)).catch((err: unknown) => {
        throw new ConflictError(
          `cannot roll back: slot ${next.default} has no ${f}`,
          { slot: next.default },
          { cause: err },
        );
      });
    }
    await writeSlots(dir, next, boot.arch);
    return next;
  });
  await meta.delete(MetaTag.upgrade);
  return slots;
}
