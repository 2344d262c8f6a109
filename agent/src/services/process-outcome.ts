// How a process's start failure and exit read in service events: as Go's os/exec words them, since
// Talos's process runner reports those errors unchanged (`talosctl service` users match on them).
import os from "node:os";
import { getSystemErrorMap } from "node:util";

/** Linux signal descriptions as Go's syscall package names them (signal: killed, ...). */
const signalText: Record<number, string> = {
  1: "hangup",
  2: "interrupt",
  3: "quit",
  4: "illegal instruction",
  5: "trace/breakpoint trap",
  6: "aborted",
  7: "bus error",
  8: "floating point exception",
  9: "killed",
  10: "user defined signal 1",
  11: "segmentation fault",
  12: "user defined signal 2",
  13: "broken pipe",
  14: "alarm clock",
  15: "terminated",
  16: "stack fault",
  17: "child exited",
  18: "continued",
  19: "stopped (signal)",
  20: "stopped",
  21: "stopped (tty input)",
  22: "stopped (tty output)",
  23: "urgent I/O condition",
  24: "CPU time limit exceeded",
  25: "file size limit exceeded",
  26: "virtual timer expired",
  27: "profiling timer expired",
  28: "window changed",
  29: "I/O possible",
  30: "power failure",
  31: "bad system call",
};

/** Go's ProcessState.String(): `exit status 1`, `signal: killed`. */
export function exitText(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) {
    const n = os.constants.signals[signal];
    return `signal: ${signalText[n] ?? signal}`;
  }
  return `exit status ${code ?? 0}`;
}

/**
 * Go's error for a program that could not be started: `fork/exec /path: no such file or directory`,
 * or for a bare name not on PATH `exec: "name": executable file not found in $PATH`.
 */
export function startErrorText(command: string, err: NodeJS.ErrnoException): string {
  if (!command.includes("/") && err.code === "ENOENT")
    return `exec: ${JSON.stringify(command)}: executable file not found in $PATH`;
  // libuv's messages are strerror's, lower-case as Go prints them.
  const message = err.errno !== undefined ? getSystemErrorMap().get(err.errno)?.[1] : undefined;
  return `fork/exec ${command}: ${message ?? err.code ?? err.message}`;
}

/** Go's %q of a []string: `["/bin/sh" "-c" "x"]` (JSON's string quoting matches strconv.Quote for printable text). */
export function quotedArgs(argv: string[]): string {
  return `[${argv.map((a) => JSON.stringify(a)).join(" ")}]`;
}
