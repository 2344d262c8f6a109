// MachineService.Read (talosctl read, and the boot_id check of `reboot --wait`):
// a regular file streamed as common.Data chunks. Anything else (a directory, a device,
// a FIFO that would never end) is refused before a byte is sent, as Talos refuses it.

import type * as grpc from "@grpc/grpc-js";
import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError, SystemError } from "../../errors.js";
import { pathError } from "./errno.js";
import { cancellation, send } from "./stream.js";

const chunkSize = 64 * 1024;

export interface ReadRequest {
  path?: string;
}

/** Streams the file named by the request; relative paths are taken from "/", machined's working directory on a node. */
export async function streamFile(call: grpc.ServerWritableStream<ReadRequest, unknown>): Promise<void> {
  const file = path.resolve("/", call.request.path ?? "");
  const st = await fs.stat(file).catch((err: unknown) => {
    throw pathError("stat", file, err);
  });
  if (!st.isFile()) {
    const what = st.isDirectory() ? "a directory" : "not a regular file";
    throw new InvalidInputError(`path must be a regular file: ${file} is ${what}`, { file });
  }
  const { signal, dispose } = cancellation(call);
  // /proc and /sys files report size 0 yet have content: read until EOF, never by size.
  const stream = createReadStream(file, { highWaterMark: chunkSize, signal });
  try {
    for await (const chunk of stream) {
      if (!(await send(call, { bytes: chunk as Buffer }))) break;
    }
  } catch (err) {
    if (!signal.aborted) throw new SystemError(`read ${file}: ${(err as Error).message}`, { file }, { cause: err });
  } finally {
    stream.destroy();
    dispose();
  }
  if (!call.cancelled) call.end();
}
