import { mkdir } from "node:fs/promises";
import path from "node:path";
import { logger } from "../../log.js";
import { installedCmdline } from "./install.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

export async function reboot(r: MachineRuntime): Promise<void> {
  await r.power.request("reboot");
}

export async function shutdown(r: MachineRuntime): Promise<void> {
  await r.power.request(r.cmdline.get("talos.shutdown")?.at(-1) === "halt" ? "halt" : "poweroff");
}

/**
 * Boots the installed kernel directly (kexec), as Talos does after an install; init
 * loads it before stopping anything and falls back to a reboot if it cannot.
 */
export async function kexecInstalled(r: MachineRuntime): Promise<void> {
  const boot = r.systemDisk?.partitions.BOOT;
  if (!boot) return reboot(r);
  const dir = path.join(r.paths.system, "boot");
  try {
    await mkdir(dir, { recursive: true });
    await r.mounter.mount(boot, dir, "xfs", ["ro"]);
  } catch (err) {
    log.warn("BOOT could not be mounted for kexec; rebooting instead", { error: String(err) });
    return reboot(r);
  }
  await r.power.kexec(path.join(dir, "A", "vmlinuz"), path.join(dir, "A", "initramfs.xz"), installedCmdline(r.cmdline));
}
