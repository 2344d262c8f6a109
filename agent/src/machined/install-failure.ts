// Why a node is still in maintenance after an install it was given failed. Talos prints the failed
// task and the error on the console, then reboots into maintenance with nothing left on screen; here
// init restarts machined instead, so the reason is kept in the system tree (tmpfs: until the next boot)
// and shown again beside the maintenance banner and in the console summary.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describeError } from "../errors.js";
import type { Paths } from "../sys/paths.js";

function failureFile(paths: Paths): string {
  return path.join(paths.system, "run", "machined", "install-failure");
}

/** Keeps the failed install's error for the machined that comes next. */
export function recordInstallFailure(paths: Paths, err: unknown): void {
  const file = failureFile(paths);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, describeError(err));
}

/** The last failed install's error in this boot, if any. */
export function lastInstallFailure(paths: Paths): string | undefined {
  try {
    return readFileSync(failureFile(paths), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** An install that went through: the earlier failure no longer explains anything. */
export function clearInstallFailure(paths: Paths): void {
  rmSync(failureFile(paths), { force: true });
}

/** The console's words for it (the maintenance banner and the summary). */
export function installFailureLines(error: string): string[] {
  return [
    `the last install failed, so the node is still in maintenance: ${error}`,
    "fix the cause, then apply the configuration again",
  ];
}
