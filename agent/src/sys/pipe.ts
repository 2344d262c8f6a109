// pipe(2), which Node has no API for: a logind inhibitor lock is the write end of a pipe
// handed to the client; the read end sees EOF once every copy of the write end is closed.

import { SystemError } from "../errors.js";
import { loadKoffi } from "./koffi.js";

export interface Pipe {
  readonly read: number;
  readonly write: number;
}

const O_CLOEXEC = 0o2000000;

let pipe2: ((fds: number[], flags: number) => number) | undefined;

/** Opens a pipe whose both ends are close-on-exec (a service started later inherits neither). */
export function openPipe(): Pipe {
  const koffi = loadKoffi();
  pipe2 ??= koffi.load("libc.so.6").func("int pipe2(_Out_ int *fds, int flags)");
  const fds = [-1, -1];
  if (pipe2(fds, O_CLOEXEC) !== 0) throw new SystemError("pipe2 failed", { errno: koffi.errno() });
  return { read: fds[0], write: fds[1] };
}
