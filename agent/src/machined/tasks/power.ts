import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { logger } from "../../log.js";
import { parseBootSlots } from "../../storage/bootloader/grub.js";
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
  // The slot GRUB boots by default (B after a confirmed upgrade); BOOT_IMAGE tells the new boot which it is.
  const cfg = await readFile(path.join(dir, "grub", "grub.cfg"), "utf8").catch(() => "");
  const label = parseBootSlots(cfg)?.default ?? "A";
  await r.power.kexec(path.join(dir, label, "vmlinuz"), path.join(dir, label, "initramfs.xz"), `BOOT_IMAGE=/${label}/vmlinuz ${installedCmdline(r.cmdline)}`);
}
