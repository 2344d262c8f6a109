// Loading the next kernel for kexec with kexec_file_load(2), in machined as Talos's
// KexecPrepare does: the caller learns whether the kexec will happen before it asks
// init to perform it (init then only calls reboot(LINUX_REBOOT_CMD_KEXEC)).

import { promises as fs } from "node:fs";
import { SystemError } from "../errors.js";
import { type Koffi, loadKoffi } from "./koffi.js";

export class KexecLoadError extends SystemError {}

export interface KexecLoader {
  /** Loads `kernel` (and `initrd`) with `cmdline`; throws KexecLoadError when this kernel cannot. */
  load(kernel: string, initrd: string | undefined, cmdline: string): Promise<void>;
}

// <asm/unistd.h>: kexec_file_load's number per architecture; <linux/kexec.h>.
const sysKexecFileLoad: Partial<Record<string, number>> = { x64: 320, arm64: 294 };
const KEXEC_FILE_NO_INITRAMFS = 4;
const ENOSYS = 38;

/** The kernel's kexec_file_load through libc's syscall(2) (koffi). */
export function kernelKexecLoader(koffi: () => Koffi = loadKoffi): KexecLoader {
  return {
    async load(kernel, initrd, cmdline) {
      const nr = sysKexecFileLoad[process.arch];
      if (nr === undefined)
        throw new KexecLoadError(`kexec_file_load has no known number on ${process.arch}`, { arch: process.arch });
      const files: fs.FileHandle[] = [];
      try {
        const open = async (file: string) => {
          try {
            const fh = await fs.open(file, "r");
            files.push(fh);
            return fh.fd;
          } catch (err) {
            throw new KexecLoadError(`opening ${file} for kexec failed`, { file }, { cause: err });
          }
        };
        const kfd = await open(kernel);
        const ifd = initrd ? await open(initrd) : -1;
        let k: Koffi;
        try {
          k = koffi();
        } catch (err) {
          throw new KexecLoadError("the FFI library (koffi) is not available", {}, { cause: err });
        }
        const syscall = k.load("libc.so.6").func("long syscall(long number, ...)");
        const rc = Number(
          syscall(
            nr,
            "int",
            kfd,
            "int",
            ifd,
            "unsigned long",
            Buffer.byteLength(cmdline) + 1,
            "const char *",
            cmdline,
            "unsigned long",
            initrd ? 0 : KEXEC_FILE_NO_INITRAMFS,
          ),
        );
        if (rc !== 0) {
          const errno = k.errno();
          // Debian's arm64 kernel has kexec_load only, which needs a userspace loader we do not carry.
          const why = errno === ENOSYS ? "this kernel has no kexec_file_load" : `errno ${errno}`;
          throw new KexecLoadError(`loading ${kernel} for kexec failed: ${why}`, { kernel, errno });
        }
      } finally {
        for (const fh of files) await fh.close();
      }
    },
  };
}
