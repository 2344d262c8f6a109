import { promises as fs } from "node:fs";
import { SystemError } from "../errors.js";

export type PowerAction = "reboot" | "poweroff" | "halt";

/** What ends a boot: a reboot, a power-off or a kexec into another kernel. */
export interface Power {
  request(action: PowerAction): Promise<void>;
  /** Boots `kernel` directly; falls back to a reboot when the kernel cannot be loaded (init does that). */
  kexec(kernel: string, initrd: string | undefined, cmdline: string): Promise<void>;
}

/**
 * A node's power: one line to init's control FIFO (initramfs/README.md, "Power
 * protocol"); init then stops every process, unmounts and calls reboot(2).
 */
export function initPower(fifo = "/run/init/control"): Power {
  const send = async (line: string) => {
    try {
      await fs.appendFile(fifo, `${line.replace(/\n/g, " ")}\n`);
    } catch (err) {
      throw new SystemError(`asking init to ${line.split(" ")[0]} failed`, { fifo }, { cause: err });
    }
  };
  return {
    request: (action) => send(action),
    kexec: (kernel, initrd, cmdline) => send(`kexec ${kernel} ${initrd ?? "-"} ${cmdline}`),
  };
}
