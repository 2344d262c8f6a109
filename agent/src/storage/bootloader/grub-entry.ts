// Reading back the default entry of a grub.cfg written by grub.ts: what a kexec
// boots (the kernel, initramfs and command line GRUB would boot), as Talos's
// KexecPrepare reads its grub.cfg.

import type { BootLabel } from "./grub.js";

export interface BootEntry {
  label: BootLabel;
  /** Paths relative to BOOT's root, e.g. A/vmlinuz. */
  kernel: string;
  initrd: string;
  cmdline: string;
}

/** Undoes grubQuote: a backslash makes the next character literal. */
export function grubUnquote(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}

/** The entry `set default=` names, or undefined when the file has none (or names an entry it lacks). */
export function defaultBootEntry(cfg: string): BootEntry | undefined {
  const def = /^set default="([^"]*)"$/m.exec(cfg)?.[1];
  if (def === undefined) return undefined;
  const blocks = cfg.split(/^menuentry /m).slice(1);
  for (const block of blocks) {
    const title = /^"([^"]*)"/.exec(block)?.[1];
    if (title !== def) continue;
    const linux = /^\s*linux \/([AB])\/(\S+)(?: (.*))?$/m.exec(block);
    const initrd = /^\s*initrd \/([AB]\/\S+)$/m.exec(block);
    if (!linux || !initrd) return undefined;
    return { label: linux[1] as BootLabel, kernel: `${linux[1]}/${linux[2]}`, initrd: initrd[1]!, cmdline: grubUnquote(linux[3] ?? "") };
  }
  return undefined;
}
