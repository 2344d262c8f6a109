// Upgrade (talosctl upgrade --image): pull the installer, write its kernel and initramfs
// into the other BOOT slot, and boot it on trial (kexec, or GRUB's one-time entry after
// a firmware reboot); --stage keeps the request in META 0x07/0x08 for the next boot.

import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../../config/bundle.js";
import { ConflictError, describeError, InvalidInputError } from "../../errors.js";
import { logger } from "../../log.js";
import type { RegistriesConfig } from "../../oci/hosts.js";
import { pullInstaller, type InstallerArch, type PulledInstaller } from "../../oci/installer.js";
import { parseImageReference } from "../../oci/reference.js";
import type { BootLabel } from "../../storage/bootloader/grub.js";
import { MetaTag } from "../../storage/meta.js";
import { currentSlots, loadTrialKexec, writeUpgradeSlot, type BootPartition } from "../../storage/upgrade.js";
import type { MachineRuntime } from "../runtime.js";
import { announceReboot, reboot } from "./power.js";
import { contractTag } from "../version.js";

const log = logger("upgrade");

export type RebootMode = "DEFAULT" | "POWERCYCLE";

export interface UpgradeOptions {
  image: string;
  preserve: boolean;
  force: boolean;
  rebootMode: RebootMode;
}

export function nodeArch(): InstallerArch {
  return process.arch === "arm64" ? "arm64" : "amd64";
}

/** .machine.registries with its base64 PEMs decoded, as the OCI client takes them. */
export function registriesOf(config: ConfigBundle | undefined): RegistriesConfig {
  const reg = config?.v1alpha1WithDefaults()?.machine?.registries;
  const pem = (b64: string | undefined) => (b64 ? Buffer.from(b64, "base64").toString("utf8") : undefined);
  const cfg: NonNullable<RegistriesConfig["config"]> = {};
  for (const [host, c] of Object.entries(reg?.config ?? {})) {
    const tls = c.tls
      ? {
          ...(c.tls.ca ? { ca: pem(c.tls.ca)! } : {}),
          ...(c.tls.clientIdentity?.crt ? { clientCert: pem(c.tls.clientIdentity.crt)! } : {}),
          ...(c.tls.clientIdentity?.key ? { clientKey: pem(c.tls.clientIdentity.key)! } : {}),
          ...(c.tls.insecureSkipVerify ? { insecureSkipVerify: true } : {}),
        }
      : undefined;
    cfg[host] = { ...(tls ? { tls } : {}), ...(c.auth ? { auth: c.auth } : {}) };
  }
  return { ...(reg?.mirrors ? { mirrors: reg.mirrors } : {}), config: cfg };
}

export function bootPartition(r: MachineRuntime, mountName: string): BootPartition {
  const device = r.systemDisk?.partitions.BOOT;
  if (!device) throw new ConflictError("system disk not found: the node is not installed", {});
  return { device, mounter: r.mounter, mountDir: path.join(r.paths.system, mountName), arch: nodeArch() };
}

/** Checks a request before anything is pulled: a bad image name is the caller's error. */
export function checkUpgradeRequest(image: string | undefined): string {
  if (!image) throw new InvalidInputError("upgrade needs an installer image (--image)");
  parseImageReference(image);
  return image;
}

/** Where a pull lands: EPHEMERAL when mounted (a disk, not memory), else the system tmpfs. */
function pullDir(r: MachineRuntime): string {
  return r.volumes.has("EPHEMERAL")
    ? path.join(r.paths.var, "lib", "basalt", "upgrade")
    : path.join(r.paths.system, "upgrade");
}

export async function pullUpgrade(
  r: MachineRuntime,
  image: string,
  config: ConfigBundle | undefined,
): Promise<PulledInstaller> {
  const destDir = pullDir(r);
  await fs.rm(destDir, { recursive: true, force: true });
  log.info("pulling the installer", { image, arch: nodeArch() });
  return pullInstaller({ image, arch: nodeArch(), registries: registriesOf(config), destDir, log });
}

/** Kernel arguments of the new slot: the running slot's, with a reboot on panic so a kernel that dies hands back to GRUB. */
export function upgradedCmdline(previous: string): string {
  return /(^|\s)panic=/.test(previous) ? previous : `${previous} panic=10`.trim();
}

export interface WrittenUpgrade {
  target: BootLabel;
  cmdline: string;
}

/** Writes the pulled system into the other slot (META 0x06 = the running slot) and removes the pull. */
export async function writeUpgrade(r: MachineRuntime, pulled: PulledInstaller, image: string): Promise<WrittenUpgrade> {
  if (!r.meta) throw new ConflictError("META is not available: the node is not installed", {});
  const boot = bootPartition(r, "boot-upgrade");
  const slots = await currentSlots(boot);
  const cmdline = upgradedCmdline(slots.entries[slots.default]!.cmdline);
  // The installer's own version is not known before it runs: the entry names the image's tag when it has one.
  const tag = parseImageReference(image).tag;
  const version = tag && tag !== "latest" ? `${contractTag} (${tag})` : contractTag;
  const plan = await writeUpgradeSlot(boot, r.meta, pulled, { version, cmdline }, log);
  r.metaChanged();
  await fs.rm(path.dirname(pulled.kernel), { recursive: true, force: true });
  return { target: plan.target, cmdline };
}

/** META 0x07/0x08 for a staged upgrade, read and deleted at once (a failing staged upgrade must not loop). */
export async function takeStagedUpgrade(r: MachineRuntime): Promise<UpgradeOptions | undefined> {
  const image = r.meta?.get(MetaTag.stagedUpgradeImageRef);
  const options = r.meta?.get(MetaTag.stagedUpgradeInstallOptions);
  if (!r.meta || image === undefined || options === undefined) return undefined;
  await r.meta.delete(MetaTag.stagedUpgradeImageRef);
  await r.meta.delete(MetaTag.stagedUpgradeInstallOptions);
  r.metaChanged();
  let parsed: Partial<UpgradeOptions> = {};
  try {
    parsed = JSON.parse(options) as Partial<UpgradeOptions>;
  } catch (err) {
    log.warn("staged upgrade options are not JSON: using the defaults", { error: String(err) });
  }
  return {
    image,
    preserve: parsed.preserve === true,
    force: parsed.force === true,
    rebootMode: parsed.rebootMode === "POWERCYCLE" ? "POWERCYCLE" : "DEFAULT",
  };
}

export async function stageUpgrade(r: MachineRuntime, opts: UpgradeOptions): Promise<void> {
  if (!r.meta) throw new ConflictError("META is not available: the node is not installed", {});
  await r.meta.set(MetaTag.stagedUpgradeImageRef, opts.image);
  await r.meta.set(
    MetaTag.stagedUpgradeInstallOptions,
    JSON.stringify({ preserve: opts.preserve, force: opts.force, rebootMode: opts.rebootMode }),
  );
  r.metaChanged();
}

/**
 * Boots the new slot once: kexec by default, POWERCYCLE (or a kernel that cannot be kexec'd)
 * through the firmware, where GRUB's one-time entry picks the new slot. Once the kexec is
 * loaded, the one-time entry goes: if the new system fails, the firmware reboot that follows
 * is the last good slot's, as after a failed one-time entry.
 */
export async function bootUpgraded(r: MachineRuntime, written: WrittenUpgrade, mode: RebootMode): Promise<void> {
  if (mode === "POWERCYCLE") return reboot(r);
  try {
    await loadTrialKexec(bootPartition(r, "boot"), written.target, written.cmdline, (kernel, initrd, cmdline) =>
      r.power.loadKexec(kernel, initrd, cmdline),
    );
  } catch (err) {
    log.warn("cannot kexec the new system: rebooting through the firmware into GRUB's one-time entry", {
      error: describeError(err),
    });
    return reboot(r);
  }
  log.info("kexec into the new system", { slot: written.target });
  await announceReboot(r);
  await r.power.kexec();
}
