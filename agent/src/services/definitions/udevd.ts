import { access, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { runTool } from "../../sys/exec.js";
import { ProcessRunner } from "../process-runner.js";
import { pollUntilReady } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

export interface UdevdServiceOptions {
  /** Debian's udevadm (systemd-udevd is the same program under that name). */
  udevadm: string;
  /** udevd's control socket, there once it listens. */
  controlSocket: string;
}

/**
 * udevd as Talos runs it: Debian's systemd-udevd, names never resolved, in /system/udevd,
 * restarted always. Healthy once its control socket answers a reload and the queue settles; the
 * first probe instead triggers every subsystem and device and settles, so /dev/disk/by-* exist after it.
 */
export function udevdService(opts: UdevdServiceOptions): ServiceDefinition {
  let triggered = false;
  // Generous: a loaded (emulated) machine's first trigger of every device can take minutes.
  const udevadm = (...args: string[]) => runTool(opts.udevadm, args, { timeoutMs: 300_000 });
  const health = async () => {
    await access(opts.controlSocket);
    if (!triggered) {
      // Talos runs a reload, a trigger of devices and one of subsystems (three udevadm processes) here; each
      // process start costs 0.5-1 s under TCG and sits on the path to the first link (DevicesStatus). udevd has
      // just read its rules, and udevadm 252's --type=all triggers the same subsystems and devices in one process.
      await udevadm("trigger", "--type=all", "--action=add");
      triggered = true;
    } else {
      await udevadm("control", "--reload");
    }
    await udevadm("settle", "--timeout=50");
  };
  const runner = new ProcessRunner({
    id: "udevd",
    command: opts.udevadm,
    argv0: "systemd-udevd",
    args: ["--resolve-names=never"],
    ready: (signal) => pollUntilReady(() => access(opts.controlSocket), signal),
    health,
  });
  return { id: "udevd", restart: "always", runner, cgroup: "/system/udevd" };
}

/** Reloads udevd's rules and replays the devices through them (after machine.udev.rules changed). */
export async function reloadUdevRules(udevadm: string): Promise<void> {
  await runTool(udevadm, ["control", "--reload"]);
  await runTool(udevadm, ["trigger", "--type=devices", "--action=add"]);
}

/** Writes machine.udev.rules to `file` (removed when there are none); true when it changed. */
export async function writeUdevRules(file: string, rules: readonly string[]): Promise<boolean> {
  const text = rules.length > 0 ? rules.join("\n") + "\n" : undefined;
  const current = await readFile(file, "utf8").catch(() => undefined);
  if (current === text) return false;
  if (text === undefined) {
    await rm(file, { force: true });
  } else {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  return true;
}
