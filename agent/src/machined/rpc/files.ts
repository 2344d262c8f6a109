// Read and Mounts: what a user looks at to see an installed node (talosctl read, mounts).

import type * as grpc from "@grpc/grpc-js";
import { createReadStream, promises as fs } from "node:fs";
import { InvalidInputError, NotFoundError, SystemError } from "../../errors.js";
import type { MountEntry } from "../../sys/mount.js";

const chunkSize = 64 * 1024;

/** Streams a file as common.Data messages; a directory or a missing path is refused before anything is sent. */
export async function streamFile(file: string, call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
  if (!file.startsWith("/")) throw new InvalidInputError(`path must be absolute: ${JSON.stringify(file)}`);
  let st;
  try {
    st = await fs.stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new NotFoundError(`open ${file}: no such file or directory`, { file });
    throw new SystemError(`stat ${file} failed`, { file }, { cause: err });
  }
  if (st.isDirectory()) throw new InvalidInputError(`read ${file}: is a directory`, { file });
  const stream = createReadStream(file, { highWaterMark: chunkSize });
  const stop = () => stream.destroy();
  call.once("cancelled", stop);
  try {
    for await (const chunk of stream) {
      if (!call.write({ bytes: chunk as Buffer })) await new Promise((resolve) => call.once("drain", resolve));
    }
  } catch (err) {
    throw new SystemError(`read ${file} failed`, { file }, { cause: err });
  } finally {
    call.off("cancelled", stop);
  }
  call.end();
}

/** machine.Mounts: every mounted filesystem with its size and free space (statfs), as Talos lists /proc/mounts. */
export async function mountStats(entries: readonly MountEntry[]) {
  const stats = [];
  for (const m of entries) {
    try {
      const s = await fs.statfs(m.target);
      stats.push({ filesystem: m.source, size: s.blocks * s.bsize, available: s.bavail * s.bsize, mounted_on: m.target });
    } catch {
      // a mount that vanished or cannot be queried is left out, as Talos skips statfs failures
    }
  }
  return { messages: [{ stats }] };
}
