// Writing a whole disk as systemd's block device locking protocol asks
// (https://systemd.io/BLOCK_DEVICE_LOCKING/) and Talos's installer does (go-blockdevice's
// WithExclusiveLock): a BSD flock(LOCK_EX) on the whole-disk node for as long as the disk is
// partitioned, formatted and given its bootloader. While it is held systemd-udevd neither probes the
// disk nor answers a writer's close with its own partition table re-read (BLKRRPART), which drops
// every partition and scans the disk again under the writer. The kernel learns the new partitions
// one by one (BLKPG), as go-blockdevice's GPT writer does: no re-read, so no moment without them,
// and no EBUSY because another partition is in use.

import { promises as fs, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { SystemError } from "../errors.js";
import { type Koffi, locateKoffi } from "./koffi.js";

export class DiskLockError extends SystemError {}

/** A partition as the kernel knows it; bytes from the start of the disk. */
export interface KernelPartition {
  number: number;
  startBytes: number;
  sizeBytes: number;
}

/** A disk this process holds the exclusive lock of. */
export interface LockedDisk {
  readonly disk: string;
  /** The partitions the kernel shows for the disk now. */
  kernelPartitions(): KernelPartition[];
  /** Makes the kernel's partitions exactly `wanted`: those that differ are removed, the missing added. */
  setKernelPartitions(wanted: readonly KernelPartition[]): Promise<void>;
  /** Drops the lock (closing the descriptor, which was opened read-only so udev sees no write). */
  release(): Promise<void>;
}

export interface DiskLocker {
  lock(disk: string): Promise<LockedDisk>;
}

/** The BLKPG calls that turn the kernel's partitions into `wanted`: removals first, then additions. */
export function partitionChanges(
  current: readonly KernelPartition[],
  wanted: readonly KernelPartition[],
): { remove: number[]; add: KernelPartition[] } {
  const same = (a: KernelPartition, b: KernelPartition) =>
    a.number === b.number && a.startBytes === b.startBytes && a.sizeBytes === b.sizeBytes;
  return {
    remove: current.filter((c) => !wanted.some((w) => same(c, w))).map((c) => c.number),
    add: wanted.filter((w) => !current.some((c) => same(c, w))),
  };
}

/** Runs `fn` with `disk` locked, releasing the lock however `fn` ends. */
export async function withLockedDisk<T>(
  locker: DiskLocker,
  disk: string,
  fn: (locked: LockedDisk) => Promise<T>,
): Promise<T> {
  const locked = await locker.lock(disk);
  try {
    return await fn(locked);
  } finally {
    await locked.release();
  }
}

// <sys/file.h>, <linux/fs.h> (BLKPG = _IO(0x12, 105)), <linux/blkpg.h>, <asm-generic/errno-base.h>
const LOCK_EX = 2;
const LOCK_NB = 4;
const BLKPG = 0x1269;
const BLKPG_ADD_PARTITION = 1;
const BLKPG_DEL_PARTITION = 2;
const EWOULDBLOCK = 11;
const EBUSY = 16;
/** struct blkpg_partition: start, length (long long), pno (int), devname[64], volname[64], padded to 8. */
const blkpgPartitionSize = 152;

interface DiskCalls {
  flock(fd: number, op: number): number;
  blkpg(fd: number, op: number, partition: Buffer): number;
  errno(): number;
}

// koffi's struct names are process-wide (a second declaration throws), so the calls are declared once.
let declared: DiskCalls | undefined;

function openDiskCalls(koffi: Koffi): DiskCalls {
  if (declared) return declared;
  const libc = koffi.load("libc.so.6");
  koffi.struct("blkpg_ioctl_arg", { op: "int", flags: "int", datalen: "int", data: "uint8_t *" });
  const flock = libc.func("int flock(int fd, int op)");
  const ioctl = libc.func("int ioctl(int fd, unsigned long request, blkpg_ioctl_arg *arg)");
  declared = {
    flock: (fd, op) => flock(fd, op),
    blkpg: (fd, op, partition) => ioctl(fd, BLKPG, { op, flags: 0, datalen: blkpgPartitionSize, data: partition }),
    errno: () => koffi.errno(),
  };
  return declared;
}

function blkpgPartition(p: Pick<KernelPartition, "number"> & Partial<KernelPartition>): Buffer {
  const b = Buffer.alloc(blkpgPartitionSize);
  b.writeBigInt64LE(BigInt(p.startBytes ?? 0), 0);
  b.writeBigInt64LE(BigInt(p.sizeBytes ?? 0), 8);
  b.writeInt32LE(p.number, 16);
  return b;
}

/** The partitions of `disk` in sysfs (start and size count 512-byte sectors whatever the disk's). */
export function readKernelPartitions(disk: string, sysRoot = "/sys"): KernelPartition[] {
  const name = path.basename(disk);
  const dir = path.join(sysRoot, "class", "block", name);
  const out: KernelPartition[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    throw new DiskLockError(`reading ${disk}'s partitions from sysfs failed`, { disk }, { cause: err });
  }
  for (const entry of entries) {
    if (!entry.startsWith(name)) continue;
    let number: number;
    let start: number;
    let size: number;
    try {
      number = Number(readFileSync(path.join(dir, entry, "partition"), "utf8").trim());
      start = Number(readFileSync(path.join(dir, entry, "start"), "utf8").trim());
      size = Number(readFileSync(path.join(dir, entry, "size"), "utf8").trim());
    } catch {
      continue; // removed while listed
    }
    out.push({ number, startBytes: start * 512, sizeBytes: size * 512 });
  }
  return out.sort((a, b) => a.number - b.number);
}

/** The kernel's flock and BLKPG through libc (koffi); waits for a lock another writer holds. */
export class KernelDiskLocker implements DiskLocker {
  constructor(
    private readonly opts: { sysRoot?: string; lockTimeoutMs?: number; busyTimeoutMs?: number } = {},
    private readonly koffi: () => Koffi = locateKoffi(),
  ) {}

  async lock(disk: string): Promise<LockedDisk> {
    const calls = openDiskCalls(this.koffi());
    let fh: fs.FileHandle;
    try {
      fh = await fs.open(disk, "r");
    } catch (err) {
      throw new DiskLockError(`opening ${disk} to lock it failed`, { disk }, { cause: err });
    }
    // Non-blocking tries: a blocking flock would stop Node's event loop while udev probes the disk.
    const deadline = Date.now() + (this.opts.lockTimeoutMs ?? 60_000);
    while (calls.flock(fh.fd, LOCK_EX | LOCK_NB) !== 0) {
      const errno = calls.errno();
      if (errno !== EWOULDBLOCK || Date.now() > deadline) {
        await fh.close();
        throw new DiskLockError(`locking ${disk} failed: errno ${errno}`, { disk, errno });
      }
      await sleep(50);
    }
    return this.locked(disk, fh, calls);
  }

  private locked(disk: string, fh: fs.FileHandle, calls: DiskCalls): LockedDisk {
    const sysRoot = this.opts.sysRoot ?? "/sys";
    const busyTimeoutMs = this.opts.busyTimeoutMs ?? 10_000;
    const blkpg = async (op: number, p: Pick<KernelPartition, "number"> & Partial<KernelPartition>) => {
      // A partition still held open (udev's probe of it ending) answers EBUSY for a moment; Talos retries 10 s.
      const deadline = Date.now() + busyTimeoutMs;
      while (calls.blkpg(fh.fd, op, blkpgPartition(p)) !== 0) {
        const errno = calls.errno();
        if (errno !== EBUSY || Date.now() > deadline) {
          const what = op === BLKPG_ADD_PARTITION ? "adding" : "removing";
          throw new DiskLockError(`${what} partition ${p.number} of ${disk} in the kernel failed: errno ${errno}`, {
            disk,
            partition: p.number,
            errno,
          });
        }
        await sleep(100);
      }
    };
    return {
      disk,
      kernelPartitions: () => readKernelPartitions(disk, sysRoot),
      async setKernelPartitions(wanted) {
        const { remove, add } = partitionChanges(readKernelPartitions(disk, sysRoot), wanted);
        for (const number of remove) await blkpg(BLKPG_DEL_PARTITION, { number });
        for (const p of add) await blkpg(BLKPG_ADD_PARTITION, p);
      },
      release: () => fh.close(),
    };
  }
}
