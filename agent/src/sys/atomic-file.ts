import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { SystemError } from "../errors.js";

/**
 * Replaces `file` with `data` so that a crash leaves either the old or the new
 * content, never a mix: write a temporary file, fsync it, rename over the
 * target, then fsync the directory so the rename itself is durable.
 */
export async function writeFileAtomic(file: string, data: Uint8Array | string, mode = 0o600): Promise<void> {
  const dir = path.dirname(file);
  // Unique per call: two writes of one file in the same millisecond must not share a temporary.
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const fh = await fs.open(tmp, "w", mode);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
    const dh = await fs.open(dir, "r");
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  } catch (err) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw new SystemError(`writing ${file} atomically failed`, { file }, { cause: err });
  }
}

/**
 * Rewrites `file` in place (truncate, write), keeping its inode: a file bind-mounted elsewhere
 * (init binds /system/etc/hosts, resolv.conf and machine-id over /etc's) shows the new content
 * there, where a rename would leave the mount on the old file.
 */
export async function writeFileInPlace(file: string, data: Uint8Array | string, mode: number): Promise<void> {
  try {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
    await fs.writeFile(file, data, { mode });
    await fs.chmod(file, mode);
  } catch (err) {
    throw new SystemError(`writing ${file} failed`, { file }, { cause: err });
  }
}

/** Reads a file, or returns undefined when it does not exist. */
export async function readFileIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new SystemError(`reading ${file} failed`, { file }, { cause: err });
  }
}
