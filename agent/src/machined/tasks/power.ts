import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { parseBootSlots } from "../../storage/bootloader/grub.js";
import { rebootedEvent } from "../platform-events.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/** Talos waits for its reboot event however long the endpoint's retries last; a node must go down soon. */
const rebootEventLimitMs = 10_000;

/** The platform hears of a reboot or kexec just before it happens. */
export async function announceReboot(r: MachineRuntime): Promise<void> {
  r.platformEvent(rebootedEvent);
  await r.platformEventsSent(rebootEventLimitMs);
}

export async function reboot(r: MachineRuntime): Promise<void> {
  await announceReboot(r);
  await r.power.request("reboot");
}

export async function shutdown(r: MachineRuntime): Promise<void> {
  await r.power.request(r.cmdline.get("talos.shutdown")?.at(-1) === "halt" ? "halt" : "poweroff");
}

/**
 * Boots GRUB's default entry of the installed system directly (kexec), as Talos does after an
 * install and on a reboot. Without BOOT, a readable default entry or a kernel that kexec_file_load
 * takes, a reboot through the firmware.
 */
export async function kexecInstalled(r: MachineRuntime): Promise<void> {
  const boot = r.systemDisk?.partitions.BOOT;
  if (!boot) return reboot(r);
  const dir = path.join(r.paths.system, "boot");
  let slots;
  try {
    await mkdir(dir, { recursive: true });
    await r.mounter.mount(boot, dir, "xfs", ["ro"]);
    slots = parseBootSlots(await readFile(path.join(dir, "grub", "grub.cfg"), "utf8"));
  } catch (err) {
    log.warn("BOOT's grub.cfg could not be read for kexec; rebooting instead", { error: describeError(err) });
    return reboot(r);
  }
  const installed = slots?.entries[slots.default];
  if (!slots || !installed) {
    log.warn("grub.cfg has no default entry to kexec; rebooting instead");
    return reboot(r);
  }
  // The slot GRUB boots by default (B after a confirmed upgrade), with its own command line; BOOT_IMAGE, which
  // GRUB adds, tells the new boot which slot it is.
  const label = slots.default;
  try {
    await r.power.loadKexec(
      path.join(dir, label, "vmlinuz"),
      path.join(dir, label, "initramfs.xz"),
      `BOOT_IMAGE=/${label}/vmlinuz ${installed.cmdline}`,
    );
  } catch (err) {
    log.warn("cannot kexec the installed kernel: rebooting through the firmware", { error: describeError(err) });
    return reboot(r);
  }
  log.info("kexec into the installed system", { entry: label });
  await announceReboot(r);
  await r.power.kexec();
}
