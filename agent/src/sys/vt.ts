// The Linux virtual terminals the console summary is drawn on, as Talos's dashboard uses them: the
// kernel's messages kept on tty1 (TIOCLINUX TIOCL_SETKMSGREDIRECT), the summary on tty2, and
// VT_ACTIVATE to show one of them. Node has no ioctl, so these go through libc (koffi).

import { closeSync, openSync, writeSync } from "node:fs";
import { SystemError } from "../errors.js";
import { type Koffi, locateKoffi } from "./koffi.js";

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

// <linux/vt.h>, <asm-generic/ioctls.h>, <linux/tiocl.h>
const VT_ACTIVATE = 0x5606;
const TIOCLINUX = 0x541c;
const TIOCL_SETKMSGREDIRECT = 11;
const TIOCGWINSZ = 0x5413;

interface Ioctl {
  withInt(fd: number, request: number, arg: number): number;
  withBytes(fd: number, request: number, arg: Buffer): number;
  errno(): number;
}

function openIoctl(koffi: Koffi): Ioctl {
  const libc = koffi.load("libc.so.6");
  // ioctl is variadic; on x86_64 and arm64 Linux an int or pointer third argument passes as a fixed one.
  const withInt = libc.func("int ioctl(int fd, unsigned long request, long arg)");
  const withBytes = libc.func("int ioctl(int fd, unsigned long request, _Inout_ uint8_t *arg)");
  return { withInt: (fd, r, a) => withInt(fd, r, a), withBytes: (fd, r, a) => withBytes(fd, r, a), errno: () => koffi.errno() };
}

/** The kernel's terminals under `dev` (/dev on a node). */
export class KernelVirtualTerminals implements VirtualTerminals {
  private opened: Ioctl | undefined;
  constructor(
    private readonly dev = "/dev",
    private readonly koffi: () => Koffi = locateKoffi(),
  ) {}

  draw(tty: number, text: string): void {
    this.withTty(tty, "w", (fd) => {
      // Home, clear, then the text with CRLF (the tty's output processing may be off).
      writeSync(fd, "\x1b[H\x1b[2J" + text.replaceAll("\n", "\r\n"));
    });
  }

  activate(tty: number, kernelTty: number): void {
    this.withTty(kernelTty, "r+", (fd) => {
      if (this.ioctl.withBytes(fd, TIOCLINUX, Buffer.from([TIOCL_SETKMSGREDIRECT, kernelTty])) < 0) {
        throw new VirtualTerminalError(`redirecting kernel messages to tty${kernelTty} failed: errno ${this.ioctl.errno()}`, { tty: kernelTty });
      }
    });
    // Any terminal's descriptor can switch; tty0 is the one always present.
    this.withTty(0, "r+", (fd) => {
      if (this.ioctl.withInt(fd, VT_ACTIVATE, tty) < 0) throw new VirtualTerminalError(`activating tty${tty} failed: errno ${this.ioctl.errno()}`, { tty });
    });
  }

  size(tty: number): { rows: number; cols: number } {
    // struct winsize: rows, columns, then pixel sizes (unsigned short each).
    const winsize = Buffer.alloc(8);
    this.withTty(tty, "r", (fd) => {
      if (this.ioctl.withBytes(fd, TIOCGWINSZ, winsize) < 0) throw new VirtualTerminalError(`reading the size of tty${tty} failed: errno ${this.ioctl.errno()}`, { tty });
    });
    return { rows: winsize.readUInt16LE(0), cols: winsize.readUInt16LE(2) };
  }

  private get ioctl(): Ioctl {
    try {
      this.opened ??= openIoctl(this.koffi());
    } catch (err) {
      throw new VirtualTerminalError("loading the FFI library (koffi) failed", {}, { cause: err });
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
