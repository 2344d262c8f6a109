// The last resort for an error nothing handled (an uncaught exception, an unhandled rejection): as a Go
// panic in Talos, the process ends, with the whole error on stderr (the node's console for machined).
import { inspect } from "node:util";
import { describeError } from "../errors.js";

/**
 * Reports a fatal error under the process's name, first as one line with its cause chain, then
 * whole (stack, fields, causes), and exits with status 1: init restarts machined, machined's
 * supervisor restarts apid and trustd. Nothing is swallowed.
 */
export function installCrashReport(name: string): void {
  for (const origin of ["uncaughtException", "unhandledRejection"] as const) {
    process.on(origin, (err: unknown) => {
      process.stderr.write(`basalt ${name}: fatal ${origin}: ${describeError(err)}\n${inspect(err, { depth: 8 })}\n`);
      process.exit(1);
    });
  }
}
