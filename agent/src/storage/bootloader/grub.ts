// GRUB on the system disk (reference §8.3): BOOT holds A/ and B/ (kernel and
// initramfs) and grub/grub.cfg; the EFI partition holds the removable-path EFI
// loader; the BIOS boot partition holds the core image for legacy firmware.

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../../errors.js";
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
  return [
    `menuentry "${title}" {`,
    `  set gfxmode=auto`,
    `  set gfxpayload=text`,
    `  linux /${label}/vmlinuz ${grubQuote(cmdline)}${extra}`,
    `  initrd /${label}/initramfs.xz`,
    `}`,
  ].join("\n");
}

/** One BOOT slot's entry: the system installed there. */
export interface GrubEntry {
  version: string;
  cmdline: string;
}

/** What grub.cfg says: the default and fallback slots and each slot's entry. */
export interface BootSlots {
  default: BootLabel;
  fallback?: BootLabel;
  entries: Partial<Record<BootLabel, GrubEntry>>;
}

export const grubenvFile = "grubenv";

/**
 * GRUB's one-time boot (what grub-reboot sets): a `next_entry` in grubenv is booted once,
 * cleared before it boots, and the default becomes its fallback, so a system that never
 * comes up is left on the next reset or panic for the default, which is still the last good one.
 */
const onceBlock = [
  `if [ -s "\${prefix}/${grubenvFile}" ]; then`,
  "  load_env",
  "fi",
  'if [ "${next_entry}" ]; then',
  '  set fallback="${default}"',
  '  set default="${next_entry}"',
  "  set next_entry=",
  "  save_env next_entry",
  "fi",
];

export function renderBootSlots(s: BootSlots, serialTerminal: boolean): string {
  const title = (label: BootLabel) => entryTitle(label, s.entries[label]!.version);
  const current = s.entries[s.default]!;
  const lines = [
    `set default="${title(s.default)}"`,
    ...(s.fallback ? [`set fallback="${title(s.fallback)}"`] : []),
    "set timeout=3",
    ...onceBlock,
    "",
    "insmod all_video",
    ...(serialTerminal
      ? ["serial --unit=0 --speed=115200", "terminal_input console serial", "terminal_output console serial"]
      : ["terminal_input console", "terminal_output console"]),
    "",
    // Entries in label order whichever is the default, as Talos writes them.
    ...(["A", "B"] as const)
      .filter((l) => s.entries[l])
      .map((label) => entry(title(label), label, s.entries[label]!.cmdline)),
    entry(resetEntryTitle, s.default, current.cmdline, ` ${wipeArgument}`),
    "",
  ];
  return lines.join("\n");
}

export function renderGrubConfig(c: GrubConfig): string {
  const e = { version: c.version, cmdline: c.cmdline };
  return renderBootSlots(
    {
      default: c.current,
      ...(c.fallback ? { fallback: c.fallback } : {}),
      entries: { [c.current]: e, ...(c.fallback ? { [c.fallback]: e } : {}) },
    },
    c.serialTerminal,
  );
}

function ungrubQuote(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}

/** Reads back a grub.cfg this module wrote; undefined when it is not one (no default entry found). */
export function parseBootSlots(text: string): BootSlots | undefined {
  const label = (title: string | undefined): BootLabel | undefined =>
    title ? (/^(A|B) - /.exec(title)?.[1] as BootLabel | undefined) : undefined;
  const def = label(/^set default="([^"]*)"/m.exec(text)?.[1]);
  const fallback = label(/^set fallback="([^"]*)"/m.exec(text)?.[1]);
  const entries: Partial<Record<BootLabel, GrubEntry>> = {};
  for (const m of text.matchAll(/^menuentry "(A|B) - Basalt ([^"]*)" \{\n(?:.*\n)*?\s*linux \/\1\/vmlinuz ?(.*)\n/gm)) {
    entries[m[1] as BootLabel] = { version: m[2]!, cmdline: ungrubQuote(m[3]!) };
  }
  if (!def || !entries[def]) return undefined;
  return { default: def, ...(fallback && entries[fallback] ? { fallback } : {}), entries };
}

/** A grubenv block (exactly 1 KiB, as GRUB's save_env rewrites it in place) holding `vars`. */
export function renderGrubenv(vars: Record<string, string>): Buffer {
  const head = "# GRUB Environment Block\n";
  const body = Object.entries(vars)
    .map(([k, v]) => `${k}=${v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n`)
    .join("");
  const used = Buffer.byteLength(head + body);
  if (used > 1024) throw new InvalidInputError("grubenv values do not fit in 1 KiB", { bytes: used });
  return Buffer.from(head + body + "#".repeat(1024 - used));
}

export type GrubArch = "amd64" | "arm64";

const efiTarget: Record<GrubArch, { target: string; loader: string }> = {
  amd64: { target: "x86_64-efi", loader: "BOOTX64.EFI" },
  arm64: { target: "arm64-efi", loader: "BOOTAA64.EFI" },
};

// Built into the EFI image: what it needs to find BOOT and read grub.cfg; the rest loads from BOOT/grub/<target>.
const efiModules = [
  "part_gpt",
  "part_msdos",
  "xfs",
  "fat",
  "search",
  "search_fs_uuid",
  "normal",
  "configfile",
  "linux",
  "echo",
  "all_video",
  "test",
  "gzio",
];

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
    await runTool("grub-install", [
      "--target=i386-pc",
      `--boot-directory=${opts.bootDir}`,
      "--no-floppy",
      "--modules=part_gpt xfs search_fs_uuid",
      opts.disk,
    ]);
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
  await runTool("grub-mkimage", [
    "-O",
    target,
    "-o",
    image,
    "-c",
    early,
    "-p",
    "/grub",
    "-d",
    path.join(lib, target),
    ...efiModules,
  ]);
  // MTOOLS_SKIP_CHECK: mtools compares the FAT's geometry fields with a floppy's and refuses a partition otherwise.
  const env = { MTOOLS_SKIP_CHECK: "1" };
  await runTool("mmd", ["-D", "s", "-i", opts.efiPartition, "::/EFI", "::/EFI/BOOT"], { env }).catch(() => undefined); // already there on a reinstall
  await runTool("mcopy", ["-o", "-i", opts.efiPartition, image, `::/EFI/BOOT/${loader}`], { env });
  await fs.rm(image, { force: true });
  await fs.rm(early, { force: true });
}
