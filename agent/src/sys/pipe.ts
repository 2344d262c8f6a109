// pipe(2), which Node has no API for: a logind inhibitor lock is the write end of a pipe
// handed to the client; the read end sees EOF once every copy of the write end is closed.

import { SystemError } from "../errors.js";
import { locateKernelCalls, type KernelCalls } from "./kernel-calls.js";

export interface Pipe {
  readonly read: number;
  readonly write: number;
}

let addon: KernelCalls | undefined;

/** Opens a pipe whose both ends are close-on-exec (a service started later inherits neither). */
export function openPipe(): Pipe {
  addon ??= locateKernelCalls()();
  const fds = Buffer.alloc(8);
  const ret = addon.pipe(fds);
  if (ret < 0) throw new SystemError("pipe2 failed", { errno: -ret });
  return { read: fds.readInt32LE(0), write: fds.readInt32LE(4) };
}
