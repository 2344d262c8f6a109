import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { defaultBootEntry } from "../../storage/bootloader/grub-entry.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

export async function reboot(r: MachineRuntime): Promise<void> {
  await r.power.request("reboot");
}

export async function shutdown(r: MachineRuntime): Promise<void> {
  await r.power.request(r.cmdline.get("talos.shutdown")?.at(-1) === "halt" ? "halt" : "poweroff");
}

/**
 * Boots GRUB's default entry of the installed system directly (kexec), as Talos does after an
 * install and on a reboot; init loads it before stopping anything and reboots if it cannot.
 * Without BOOT or a readable default entry, a reboot through the firmware.
 */
export async function kexecInstalled(r: MachineRuntime): Promise<void> {
  const boot = r.systemDisk?.partitions.BOOT;
  if (!boot) return reboot(r);
  const dir = path.join(r.paths.system, "boot");
  let entry;
  try {
    await mkdir(dir, { recursive: true });
    await r.mounter.mount(boot, dir, "xfs", ["ro"]);
    entry = defaultBootEntry(await readFile(path.join(dir, "grub", "grub.cfg"), "utf8"));
  } catch (err) {
    log.warn("BOOT's grub.cfg could not be read for kexec; rebooting instead", { error: describeError(err) });
    return reboot(r);
  }
  if (!entry) {
    log.warn("grub.cfg has no default entry to kexec; rebooting instead");
    return reboot(r);
  }
  log.info("kexec into the installed system", { entry: entry.label });
  await r.power.kexec(path.join(dir, entry.kernel), path.join(dir, entry.initrd), entry.cmdline);
}
