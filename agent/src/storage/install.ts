// Install to disk: the steps Talos's installer takes, on our own GPT writer.
// The configuration is not written here: machined saves it to STATE afterwards.

import { promises as fs } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError, SystemError } from "../errors.js";
import type { Logger } from "../log.js";
import { openBlockTarget, partitionPath, type BlockTarget } from "../sys/blockdev.js";
import {
  KernelDiskLocker,
  partitionChanges,
  withLockedDisk,
  type DiskLocker,
  type KernelPartition,
  type LockedDisk,
} from "../sys/disk-lock.js";
import { filesystemUuid, findByLabel, makeFilesystem } from "../sys/mkfs.js";
import type { Mounter } from "../sys/mount.js";
import { writeFileAtomic } from "../sys/atomic-file.js";
import { installGrub, renderGrubConfig, type GrubArch } from "./bootloader/grub.js";
import { planTable, writeGpt, type GptTable } from "./gpt.js";
import { systemLayout, type SystemPartitionName } from "./layout.js";
import { writeMeta, type MetaValues } from "./meta.js";
import { wipeDiskHeads, wipePartitionHeads } from "./wipe.js";

export interface InstallSource {
  kernel: string;
  initramfs: string;
  /** Unmounts the boot medium, if one was mounted to find the files. */
  release(): Promise<void>;
}

export interface InstallOptions {
  disk: string;
  source: Pick<InstallSource, "kernel" | "initramfs">;
  cmdline: string;
  version: string;
  arch: GrubArch;
  /** GRUB's module tree when not the running system's /usr/lib/grub (a disk image built for another arch). */
  grubLib?: string;
  /** A writable directory for the temporary mounts of EFI and BOOT. */
  workDir: string;
  mounter: Mounter;
  meta?: MetaValues;
  /** How the new partitions become devices; default: the kernel is told each one (BLKPG) and creates its node. */
  attachPartitions?: (disk: string, table: GptTable) => Promise<string[]>;
  /** Holds the disk's exclusive lock while it is written; default: the kernel's flock. */
  locker?: DiskLocker;
  log: Logger;
}

export interface InstalledDisk {
  disk: string;
  partitions: Record<SystemPartitionName, string>;
}

/** The label of the ISO's filesystem (scripts/image.sh). */
export const bootMediumLabel = "BASALT";

/** The kernel and initramfs of the medium this node booted from (the ISO labelled BASALT). */
export async function locateInstallSource(mounter: Mounter, mountDir: string): Promise<InstallSource> {
  const dev = await findByLabel(bootMediumLabel);
  if (!dev)
    throw new NotFoundError(
      `no installation source: no boot medium labelled ${bootMediumLabel} (install needs the ISO attached)`,
    );
  await fs.mkdir(mountDir, { recursive: true });
  await mounter.mount(dev, mountDir, "iso9660", ["ro"]);
  const source = {
    kernel: path.join(mountDir, "boot", "vmlinuz"),
    initramfs: path.join(mountDir, "boot", "initramfs.xz"),
    release: () => mounter.unmount(mountDir),
  };
  for (const f of [source.kernel, source.initramfs]) {
    await fs.access(f).catch(async (err: unknown) => {
      await source.release().catch(() => undefined);
      throw new NotFoundError(
        `installation source ${dev} has no ${path.relative(mountDir, f)}`,
        { device: dev },
        { cause: err },
      );
    });
  }
  return source;
}

/** A window onto part of a device: META is written through the disk before partition nodes exist. */
function slice(dev: BlockTarget, offset: number, sizeBytes: number): BlockTarget {
  return {
    ...dev,
    sizeBytes,
    read: (o, l) => dev.read(offset + o, l),
    write: (o, d) => dev.write(offset + o, d),
    close: async () => undefined,
  };
}

async function waitForDevice(file: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fs.access(file);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new SystemError(`partition ${file} did not appear`, { file }, { cause: err });
      await sleep(100);
    }
  }
}

function tablePartitions(table: GptTable): KernelPartition[] {
  return table.partitions.map((p, i) => ({
    number: i + 1,
    startBytes: Number(p.firstLba) * table.sectorSize,
    sizeBytes: Number(p.lastLba - p.firstLba + 1n) * table.sectorSize,
  }));
}

async function kernelPartitions(locked: LockedDisk, table: GptTable): Promise<string[]> {
  await locked.setKernelPartitions(tablePartitions(table));
  const devices = table.partitions.map((_, i) => partitionPath(locked.disk, i + 1));
  for (const d of devices) await waitForDevice(d);
  return devices;
}

async function copyFileSynced(from: string, to: string): Promise<void> {
  await fs.copyFile(from, to);
  const fh = await fs.open(to, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function installToDisk(opts: InstallOptions): Promise<InstalledDisk> {
  return withLockedDisk(opts.locker ?? new KernelDiskLocker(), opts.disk, (locked) => installLocked(opts, locked));
}

async function installLocked(opts: InstallOptions, locked: LockedDisk): Promise<InstalledDisk> {
  const { log } = opts;
  const layout = systemLayout();
  const dev = await openBlockTarget(opts.disk);
  let table: GptTable;
  try {
    log.info("wiping the disk's partition tables and signatures", { disk: opts.disk });
    await wipeDiskHeads(dev);
    table = planTable(dev.sizeBytes, dev.sectorSize, layout);
    await writeGpt(dev, table);
    await wipePartitionHeads(dev, table);
    const meta = table.partitions.find((p) => p.name === "META")!;
    const metaStart = Number(meta.firstLba) * table.sectorSize;
    await writeMeta(
      slice(dev, metaStart, Number(meta.lastLba - meta.firstLba + 1n) * table.sectorSize),
      opts.meta ?? new Map(),
    );
    // The partitions' zeroed heads are in the disk's page cache; mkfs writes through the partitions' own.
    await dev.sync();
  } finally {
    await dev.close();
  }
  log.info("partition table written", { disk: opts.disk, partitions: table.partitions.map((p) => p.name) });
  const devices = opts.attachPartitions
    ? await opts.attachPartitions(opts.disk, table)
    : await kernelPartitions(locked, table);
  const partitions = Object.fromEntries(layout.map((p, i) => [p.name, devices[i]!])) as Record<
    SystemPartitionName,
    string
  >;

  for (const p of layout) if (p.installFs) await makeFilesystem(partitions[p.name], p.installFs, p.name);
  const bootDir = path.join(opts.workDir, "boot");
  await fs.mkdir(bootDir, { recursive: true });
  const bootUuid = await filesystemUuid(partitions.BOOT);
  await opts.mounter.mount(partitions.BOOT, bootDir, "xfs");
  try {
    await fs.mkdir(path.join(bootDir, "A"), { recursive: true });
    await copyFileSynced(opts.source.kernel, path.join(bootDir, "A", "vmlinuz"));
    await copyFileSynced(opts.source.initramfs, path.join(bootDir, "A", "initramfs.xz"));
    await installGrub({
      disk: opts.disk,
      bootDir,
      bootUuid,
      efiPartition: partitions.EFI,
      workDir: opts.workDir,
      arch: opts.arch,
      ...(opts.grubLib ? { grubLib: opts.grubLib } : {}),
    });
    await writeFileAtomic(
      path.join(bootDir, "grub", "grub.cfg"),
      renderGrubConfig({
        current: "A",
        version: opts.version,
        cmdline: opts.cmdline,
        serialTerminal: opts.arch === "amd64",
      }),
      0o644,
    );
    log.info("bootloader installed", { disk: opts.disk, arch: opts.arch });
  } finally {
    await opts.mounter.unmount(bootDir);
  }
  if (!opts.attachPartitions) await confirmKernelPartitions(locked, table, log);
  return { disk: opts.disk, partitions };
}

/** Before the lock goes: the kernel shows exactly the table's partitions, told again if it does not. */
async function confirmKernelPartitions(locked: LockedDisk, table: GptTable, log: Logger): Promise<void> {
  const wanted = tablePartitions(table);
  const shown = locked.kernelPartitions();
  const { remove, add } = partitionChanges(shown, wanted);
  if (remove.length === 0 && add.length === 0) return;
  log.warn("the kernel's partitions differ from the table written: telling it again", {
    disk: locked.disk,
    shown,
    wanted,
  });
  await locked.setKernelPartitions(wanted);
}

/**
 * Whether an install on this disk finished: grub.cfg is written last, so a disk whose
 * install was cut short (power loss) has none and is installed again.
 */
export async function installComplete(boot: string | undefined, mounter: Mounter, mountDir: string): Promise<boolean> {
  if (!boot) return false;
  await fs.mkdir(mountDir, { recursive: true });
  try {
    await mounter.mount(boot, mountDir, "xfs", ["ro"]);
  } catch {
    return false;
  }
  try {
    await fs.access(path.join(mountDir, "grub", "grub.cfg"));
    await fs.access(path.join(mountDir, "A", "initramfs.xz"));
    return true;
  } catch {
    return false;
  } finally {
    await mounter.unmount(mountDir);
  }
}
