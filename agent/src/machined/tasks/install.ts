import { promises as fs } from "node:fs";
import path from "node:path";
import { describeError, InvalidInputError } from "../../errors.js";
import { logger } from "../../log.js";
import { loadConfig as parseConfig } from "../../config/load.js";
import { chooseInstallDisk } from "../../storage/disk-selector.js";
import { listDisks } from "../../storage/disks.js";
import { installToDisk, locateInstallSource } from "../../storage/install.js";
import { installedEvent, installFailedEvent } from "../platform-events.js";
import type { MachineRuntime } from "../runtime.js";
import { contractTag } from "../version.js";
import { NotFoundError } from "../../errors.js";
import { pullUpgrade } from "./upgrade.js";
import type { InstallSource } from "../../storage/install.js";

const log = logger("install");

/** Kernel arguments the installed system boots with: this boot's, less the one-shot ones. */
export function installedCmdline(cmdline: Map<string, string[]>): string {
  const drop = new Set(["BOOT_IMAGE", "initrd", "talos.experimental.wipe", "talos.config"]);
  const args: string[] = [];
  for (const [key, values] of cmdline) {
    if (drop.has(key)) continue;
    for (const v of values) args.push(v === "" ? key : `${key}=${v}`);
  }
  return args.join(" ");
}

/** Installs to the configured disk; the platform hears how it went. */
export async function install(r: MachineRuntime): Promise<void> {
  try {
    await installToConfiguredDisk(r);
  } catch (err) {
    r.platformEvent(installFailedEvent(describeError(err)));
    throw err;
  }
  r.platformEvent(installedEvent);
}

async function installToConfiguredDisk(r: MachineRuntime): Promise<void> {
  if (r.configText === undefined) throw new InvalidInputError("install needs a configuration");
  const installCfg = parseConfig(Buffer.from(r.configText)).v1alpha1WithDefaults()?.machine?.install ?? {};
  const disk = chooseInstallDisk(installCfg, listDisks(r.block), (p) => r.block.deviceNode(p));
  const work = path.join(r.paths.system, "install");
  const source = await installSource(r, installCfg.image, work);
  try {
    log.info("installing", { disk, kernel: source.kernel });
    // Our own table names the partitions: the kernel's partitions added one by one (BLKPG) carry no
    // GPT names in sysfs until the next boot's scan.
    r.systemDisk = await installToDisk({
      disk,
      source,
      cmdline: [installedCmdline(r.cmdline), ...(installCfg.extraKernelArgs ?? [])].join(" "),
      version: contractTag,
      arch: process.arch === "arm64" ? "arm64" : "amd64",
      workDir: work,
      mounter: r.mounter,
      log,
    });
  } finally {
    await source
      .release()
      .catch((err: unknown) => log.warn("unmounting the installation source failed", { error: String(err) }));
  }
  log.info("install to disk done", { disk, partitions: r.systemDisk?.partitions });
}

/** The ISO when one is attached; else (a PXE boot) machine.install.image, pulled into memory. */
async function installSource(r: MachineRuntime, image: string | undefined, work: string): Promise<InstallSource> {
  try {
    return await locateInstallSource(r.mounter, path.join(work, "source"));
  } catch (err) {
    if (!(err instanceof NotFoundError) || !image) throw err;
    log.info("no boot medium: installing from machine.install.image", { image });
    const pulled = await pullUpgrade(r, image, parseConfig(Buffer.from(r.configText!)));
    return {
      kernel: pulled.kernel,
      initramfs: pulled.initramfs,
      release: () => fs.rm(path.dirname(pulled.kernel), { recursive: true, force: true }),
    };
  }
}
