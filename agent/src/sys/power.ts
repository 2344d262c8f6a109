import { promises as fs } from "node:fs";
import { SystemError } from "../errors.js";
import { kernelKexecLoader, type KexecLoader } from "./kexec.js";

export type PowerAction = "reboot" | "poweroff" | "halt";

/** What ends a boot: a reboot, a power-off or a kexec into another kernel. */
export interface Power {
  request(action: PowerAction): Promise<void>;
  /** Loads the kernel the next `kexec` boots; throws KexecLoadError when it cannot be loaded. */
  loadKexec(kernel: string, initrd: string | undefined, cmdline: string): Promise<void>;
  /** Boots the kernel `loadKexec` loaded (init reboots through the firmware if that fails). */
  kexec(): Promise<void>;
}

/**
 * A node's power: one line to init's control FIFO (initramfs/README.md, "Power
 * protocol"); init then stops every process, unmounts and calls reboot(2).
 */
export function initPower(fifo = "/run/init/control", loader: KexecLoader = kernelKexecLoader()): Power {
  const send = async (line: string) => {
    try {
      await fs.appendFile(fifo, `${line}\n`);
    } catch (err) {
      throw new SystemError(`asking init to ${line} failed`, { fifo }, { cause: err });
    }
  };
  return {
    request: (action) => send(action),
    loadKexec: (kernel, initrd, cmdline) => loader.load(kernel, initrd, cmdline),
    kexec: () => send("kexec"),
  };
}
