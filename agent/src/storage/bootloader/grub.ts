// GRUB on the system disk (reference §8.3): BOOT holds A/ and B/ (kernel and
// initramfs) and grub/grub.cfg; the EFI partition holds the removable-path EFI
// loader; the BIOS boot partition holds the core image for legacy firmware.

import { promises as fs } from "node:fs";
import path from "node:path";
import { runTool } from "../../sys/exec.js";

export type BootLabel = "A" | "B";

export interface GrubConfig {
  /** The entry booted by default (the one just installed). */
  current: BootLabel;
  /** The other entry, booted when the current one fails; absent on a first install. */
  fallback?: BootLabel;
  version: string;
  cmdline: string;
  /**
   * Also use the first serial port (BIOS/UEFI PCs). UEFI on arm64 already puts its
   * console on the serial line and GRUB there finds no com0 (it prints an error).
   */
  serialTerminal: boolean;
}

export const resetEntryTitle = "Reset Basalt installation and return to maintenance mode";
export const wipeArgument = "talos.experimental.wipe=system:EPHEMERAL,STATE";

export function entryTitle(label: BootLabel, version: string): string {
  return `${label} - Basalt ${version}`;
}

/** Escapes what GRUB's shell-like parser would otherwise interpret in a kernel command line. */
export function grubQuote(s: string): string {
  return s.replace(/[\\{}&$|;<>"]/g, (c) => `\\${c}`);
}

function entry(title: string, label: BootLabel, cmdline: string, extra = ""): string {
  return [`menuentry "${title}" {`, `  set gfxmode=auto`, `  set gfxpayload=text`, `  linux /${label}/vmlinuz ${grubQuote(cmdline)}${extra}`, `  initrd /${label}/initramfs.xz`, `}`].join("\n");
}

export function renderGrubConfig(c: GrubConfig): string {
  const lines = [
    `set default="${entryTitle(c.current, c.version)}"`,
    ...(c.fallback ? [`set fallback="${entryTitle(c.fallback, c.version)}"`] : []),
    "set timeout=3",
    "",
    "insmod all_video",
    ...(c.serialTerminal
      ? ["serial --unit=0 --speed=115200", "terminal_input console serial", "terminal_output console serial"]
      : ["terminal_input console", "terminal_output console"]),
    "",
    // Entries in label order whichever is the default, as Talos writes them.
    ...[c.current, ...(c.fallback ? [c.fallback] : [])].sort().map((label) => entry(entryTitle(label, c.version), label, c.cmdline)),
    entry(resetEntryTitle, c.current, c.cmdline, ` ${wipeArgument}`),
    "",
  ];
  return lines.join("\n");
}

export type GrubArch = "amd64" | "arm64";

const efiTarget: Record<GrubArch, { target: string; loader: string }> = {
  amd64: { target: "x86_64-efi", loader: "BOOTX64.EFI" },
  arm64: { target: "arm64-efi", loader: "BOOTAA64.EFI" },
};

// Built into the EFI image: what it needs to find BOOT and read grub.cfg; the rest loads from BOOT/grub/<target>.
const efiModules = ["part_gpt", "part_msdos", "xfs", "fat", "search", "search_fs_uuid", "normal", "configfile", "linux", "echo", "all_video", "test", "gzio"];

export interface GrubInstall {
  disk: string;
  /** Where BOOT is mounted. */
  bootDir: string;
  /** BOOT's filesystem UUID: the EFI loader finds grub.cfg by it. */
  bootUuid: string;
  /** The EFI partition (vfat), written with mtools: no mount needed. */
  efiPartition: string;
  /** Scratch space for the built image. */
  workDir: string;
  arch: GrubArch;
  /** GRUB's module tree (/usr/lib/grub). */
  grubLib?: string;
}

/**
 * Installs GRUB: the BIOS core image (amd64, embedded in the BIOS boot partition by
 * grub-install) and a UEFI loader on the removable path of the EFI partition, built
 * with grub-mkimage so it finds BOOT by UUID without probing the EFI mount.
 */
export async function installGrub(opts: GrubInstall): Promise<void> {
  const lib = opts.grubLib ?? "/usr/lib/grub";
  if (opts.arch === "amd64") {
    // The modules to find BOOT are named: grub-install guesses them from BOOT's device, which for a disk
    // image built on loop devices is a whole loop device (no partition table: part_gpt was left out).
    await runTool("grub-install", ["--target=i386-pc", `--boot-directory=${opts.bootDir}`, "--no-floppy", "--modules=part_gpt xfs search_fs_uuid", opts.disk]);
  }
  const { target, loader } = efiTarget[opts.arch];
  const modules = path.join(opts.bootDir, "grub", target);
  await fs.mkdir(modules, { recursive: true });
  for (const f of await fs.readdir(path.join(lib, target))) {
    if (/\.(mod|lst)$/.test(f)) await fs.copyFile(path.join(lib, target, f), path.join(modules, f));
  }
  const early = path.join(opts.workDir, "grub-early.cfg");
  const image = path.join(opts.workDir, loader);
  await fs.writeFile(early, `search --no-floppy --fs-uuid --set=root ${opts.bootUuid}\nset prefix=($root)/grub\n`);
  await runTool("grub-mkimage", ["-O", target, "-o", image, "-c", early, "-p", "/grub", "-d", path.join(lib, target), ...efiModules]);
  // MTOOLS_SKIP_CHECK: mtools compares the FAT's geometry fields with a floppy's and refuses a partition otherwise.
  const env = { MTOOLS_SKIP_CHECK: "1" };
  await runTool("mmd", ["-D", "s", "-i", opts.efiPartition, "::/EFI", "::/EFI/BOOT"], { env }).catch(() => undefined); // already there on a reinstall
  await runTool("mcopy", ["-o", "-i", opts.efiPartition, image, `::/EFI/BOOT/${loader}`], { env });
  await fs.rm(image, { force: true });
  await fs.rm(early, { force: true });
}
