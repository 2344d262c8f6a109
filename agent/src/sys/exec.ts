import { execFile } from "node:child_process";
import { SystemError } from "../errors.js";

/**
 * Runs a system tool (util-linux, xfsprogs, dosfstools, grub) and returns its
 * stdout; a non-zero exit is a SystemError carrying the tool's stderr.
 */
export function runTool(
  command: string,
  args: readonly string[],
  opts: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = opts.env ? { ...process.env, ...opts.env } : process.env;
    execFile(
      command,
      [...args],
      { timeout: opts.timeoutMs ?? 120_000, maxBuffer: 16 * 1024 * 1024, env },
      (err, stdout, stderr) => {
        if (err) {
          // Without stderr, say how it ended (a kill at the timeout reads as a bare "Command failed").
          const ended = err.killed
            ? `killed after ${opts.timeoutMs ?? 120_000} ms`
            : typeof err.code === "number"
              ? `exit status ${err.code}`
              : err.message;
          const detail = String(stderr).trim().split("\n").slice(-5).join("; ") || ended;
          reject(
            new SystemError(`${command} ${args.join(" ")}: ${detail}`, { command, args: [...args] }, { cause: err }),
          );
        } else {
          resolve(String(stdout));
        }
      },
    );
  });
}
