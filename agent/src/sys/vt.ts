// The Linux virtual terminals the console summary is drawn on, as Talos's dashboard uses them: the
// kernel's messages kept on tty1 (TIOCLINUX TIOCL_SETKMSGREDIRECT), the summary on tty2, and
// VT_ACTIVATE to show one of them. Node has no ioctl, so these go through the project's kernel-calls addon.

import { closeSync, openSync, writeSync } from "node:fs";
import { SystemError } from "../errors.js";
import { type KernelCalls, locateKernelCalls } from "./kernel-calls.js";

export class VirtualTerminalError extends SystemError {}

/** What the console summary needs from the terminals (a fake records calls in unit tests). */
export interface VirtualTerminals {
  /** Replaces what tty`n` shows with `text` (the cursor homed, the screen cleared first). */
  draw(tty: number, text: string): void;
  /** Shows tty`n` on the screen, the kernel's messages staying on tty`kernelTty`. */
  activate(tty: number, kernelTty: number): void;
  /** How many rows and columns tty`n` has. */
  size(tty: number): { rows: number; cols: number };
}

// <linux/tiocl.h> (the ioctl numbers are the addon's)
const TIOCL_SETKMSGREDIRECT = 11;

/** The kernel's terminals under `dev` (/dev on a node). */
export class KernelVirtualTerminals implements VirtualTerminals {
  private opened: KernelCalls | undefined;
  constructor(
    private readonly dev = "/dev",
    private readonly addon: () => KernelCalls = locateKernelCalls(),
  ) {}

  draw(tty: number, text: string): void {
    this.withTty(tty, "w", (fd) => {
      // Home, clear, then the text with CRLF (the tty's output processing may be off).
      writeSync(fd, "\x1b[H\x1b[2J" + text.replaceAll("\n", "\r\n"));
    });
  }

  activate(tty: number, kernelTty: number): void {
    this.withTty(kernelTty, "r+", (fd) => {
      const ret = this.calls.ttyLinux(fd, Buffer.from([TIOCL_SETKMSGREDIRECT, kernelTty]));
      if (ret < 0)
        throw new VirtualTerminalError(`redirecting kernel messages to tty${kernelTty} failed: errno ${-ret}`, {
          tty: kernelTty,
        });
    });
    // Any terminal's descriptor can switch; tty0 is the one always present.
    this.withTty(0, "r+", (fd) => {
      const ret = this.calls.vtActivate(fd, tty);
      if (ret < 0) throw new VirtualTerminalError(`activating tty${tty} failed: errno ${-ret}`, { tty });
    });
  }

  size(tty: number): { rows: number; cols: number } {
    // struct winsize: rows, columns, then pixel sizes (unsigned short each).
    const winsize = Buffer.alloc(8);
    this.withTty(tty, "r", (fd) => {
      const ret = this.calls.ttyWinsize(fd, winsize);
      if (ret < 0) throw new VirtualTerminalError(`reading the size of tty${tty} failed: errno ${-ret}`, { tty });
    });
    return { rows: winsize.readUInt16LE(0), cols: winsize.readUInt16LE(2) };
  }

  private get calls(): KernelCalls {
    try {
      this.opened ??= this.addon();
    } catch (err) {
      throw new VirtualTerminalError("loading the kernel-calls addon failed", {}, { cause: err });
    }
    return this.opened;
  }

  private withTty(tty: number, flags: string, use: (fd: number) => void): void {
    const file = `${this.dev}/tty${tty}`;
    let fd: number;
    try {
      fd = openSync(file, flags);
    } catch (err) {
      throw new VirtualTerminalError(`opening ${file} failed`, { file }, { cause: err });
    }
    try {
      use(fd);
    } finally {
      closeSync(fd);
    }
  }
}
