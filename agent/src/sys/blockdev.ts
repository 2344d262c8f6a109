import { promises as fs, readFileSync } from "node:fs";
import path from "node:path";
import { SystemError } from "../errors.js";

/** A disk, partition or image file opened for raw reads and writes at byte offsets. */
export interface BlockTarget {
  readonly path: string;
  readonly sizeBytes: number;
  readonly sectorSize: number;
  read(offset: number, length: number): Promise<Buffer>;
  write(offset: number, data: Uint8Array): Promise<void>;
  /** Flushes written data to the device (fsync). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Size and logical sector size of a block device from sysfs (fstat reports 0 for devices). */
function deviceGeometry(rdev: number, sysRoot: string): { sizeBytes: number; sectorSize: number } {
  // Linux encodes dev_t as major in bits 8-19 and minor in bits 0-7 and 20-31.
  const major = (rdev >> 8) & 0xfff;
  const minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
  const dir = path.join(sysRoot, "dev", "block", `${major}:${minor}`);
  const sectors = Number(readFileSync(path.join(dir, "size"), "utf8").trim());
  let sectorSize = 512;
  try {
    sectorSize = Number(readFileSync(path.join(dir, "queue", "logical_block_size"), "utf8").trim());
  } catch {
    // partitions have no queue/ of their own; their disk's sector size is 512 in every case we install to
  }
  return { sizeBytes: sectors * 512, sectorSize };
}

/** Opens a block device or a regular (image) file for raw access. */
export async function openBlockTarget(
  file: string,
  opts: { write?: boolean; sysRoot?: string } = {},
): Promise<BlockTarget> {
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(file, opts.write === false ? "r" : "r+");
  } catch (err) {
    throw new SystemError(`opening ${file} failed`, { file }, { cause: err });
  }
  const st = await fh.stat();
  const geometry = st.isBlockDevice()
    ? deviceGeometry(Number(st.rdev), opts.sysRoot ?? "/sys")
    : { sizeBytes: st.size, sectorSize: 512 };
  return {
    path: file,
    ...geometry,
    async read(offset, length) {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      return bytesRead === length ? buf : buf.subarray(0, bytesRead);
    },
    async write(offset, data) {
      let done = 0;
      while (done < data.length) {
        const { bytesWritten } = await fh.write(data, done, data.length - done, offset + done);
        done += bytesWritten;
      }
    },
    sync: () => fh.sync(),
    close: () => fh.close(),
  };
}

/** /dev/sda + 1 → /dev/sda1; /dev/nvme0n1 + 1 → /dev/nvme0n1p1 (a name ending in a digit takes "p"). */
export function partitionPath(disk: string, index: number): string {
  return /\d$/.test(disk) ? `${disk}p${index}` : `${disk}${index}`;
}
