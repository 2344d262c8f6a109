// The kernel's clock through the project's own addon (agent/native/kernel-calls.c; Node has no API
// for these): clock_gettime(CLOCK_REALTIME) to read it, adjtimex(2) to step
// (ADJ_SETOFFSET) or slew (ADJ_OFFSET with the PLL) it exactly as Talos's SNTP client
// asks, clock_gettime on a PTP device's dynamic clock id, and the RTC_SET_TIME ioctl
// that writes the RTC after a step.

import { closeSync, openSync } from "node:fs";
import { SystemError } from "../errors.js";
import type { ClockAdjustment, KernelTimeState, LeapIndicator, SystemClock } from "./clock.js";
import { type KernelCalls, locateKernelCalls } from "./kernel-calls.js";

export class ClockError extends SystemError {}

// <linux/timex.h>
const ADJ_OFFSET = 0x0001;
const ADJ_MAXERROR = 0x0004;
const ADJ_ESTERROR = 0x0008;
const ADJ_STATUS = 0x0010;
const ADJ_TIMECONST = 0x0020;
const ADJ_SETOFFSET = 0x0100;
const ADJ_NANO = 0x2000;
const STA_PLL = 0x0001;
const STA_INS = 0x0010;
const STA_DEL = 0x0020;
const CLOCK_REALTIME = 0;
const RTC_DEVICE = "/dev/rtc0";
/** struct timex on LP64 (x86_64, arm64): 208 bytes; offsets of the fields we set. */
const TIMEX_SIZE = 208;
const OFF = {
  modes: 0,
  offset: 8,
  freq: 16,
  maxerror: 24,
  esterror: 32,
  status: 40,
  constant: 48,
  timeSec: 72,
  timeUsec: 80,
};

const leapBits = (leap: LeapIndicator) => (leap === "insert" ? STA_INS : leap === "delete" ? STA_DEL : 0);

/** The struct timex adjtimex(2) gets for an adjustment (Talos's requests, field for field). */
export function timexFor(a: ClockAdjustment): Buffer {
  const buf = Buffer.alloc(TIMEX_SIZE);
  const ns = BigInt(Math.round(a.offsetMs * 1e6));
  if (a.kind === "step") {
    buf.writeUInt32LE(ADJ_SETOFFSET | ADJ_NANO | ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR, OFF.modes);
    // With ADJ_NANO the "usec" field holds nanoseconds, and the kernel wants it positive.
    let sec = ns / 1_000_000_000n;
    let nsec = ns % 1_000_000_000n;
    if (nsec < 0n) {
      sec -= 1n;
      nsec += 1_000_000_000n;
    }
    buf.writeBigInt64LE(sec, OFF.timeSec);
    buf.writeBigInt64LE(nsec, OFF.timeUsec);
    buf.writeInt32LE(leapBits(a.leap), OFF.status);
  } else {
    buf.writeUInt32LE(ADJ_OFFSET | ADJ_NANO | ADJ_STATUS | ADJ_TIMECONST | ADJ_MAXERROR | ADJ_ESTERROR, OFF.modes);
    buf.writeBigInt64LE(ns, OFF.offset);
    buf.writeInt32LE(STA_PLL | leapBits(a.leap), OFF.status);
    buf.writeBigInt64LE(BigInt(a.timeConstant), OFF.constant);
  }
  return buf;
}

/** The state in a struct timex adjtimex(2) filled (modes 0: nothing changed), with its return value. */
export function kernelStateOf(state: number, buf: Buffer): KernelTimeState {
  return {
    state,
    offset: Number(buf.readBigInt64LE(OFF.offset)),
    freq: Number(buf.readBigInt64LE(OFF.freq)),
    maxErrorUs: Number(buf.readBigInt64LE(OFF.maxerror)),
    estErrorUs: Number(buf.readBigInt64LE(OFF.esterror)),
    status: buf.readInt32LE(OFF.status),
    constant: Number(buf.readBigInt64LE(OFF.constant)),
  };
}

/** struct rtc_time (nine ints, 36 bytes) for a moment, in UTC as the RTC keeps it. */
export function rtcTimeFor(epochMs: number): Buffer {
  const d = new Date(epochMs);
  const yday = Math.floor(
    (Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000,
  );
  const fields = [
    d.getUTCSeconds(),
    d.getUTCMinutes(),
    d.getUTCHours(),
    d.getUTCDate(),
    d.getUTCMonth(),
    d.getUTCFullYear() - 1900,
    d.getUTCDay(),
    yday,
    0,
  ];
  const buf = Buffer.alloc(36);
  fields.forEach((v, i) => buf.writeInt32LE(v, i * 4));
  return buf;
}

export class KernelClock implements SystemClock {
  private opened: KernelCalls | undefined;
  private constructor(private readonly addon: () => KernelCalls) {}

  /** Throws ClockError when this build has no kernel-calls addon; it loads on first use. */
  static load(): KernelClock {
    try {
      return new KernelClock(locateKernelCalls());
    } catch (err) {
      throw new ClockError("the kernel-calls addon is not available", {}, { cause: err });
    }
  }

  private get calls(): KernelCalls {
    try {
      this.opened ??= this.addon();
    } catch (err) {
      throw new ClockError("loading the kernel-calls addon failed", {}, { cause: err });
    }
    return this.opened;
  }

  now(): number {
    return this.gettime(CLOCK_REALTIME, "CLOCK_REALTIME");
  }

  async adjust(a: ClockAdjustment): Promise<void> {
    const ret = this.calls.adjtimex(timexFor(a));
    if (ret < 0)
      throw new ClockError(`adjtimex (${a.kind} by ${a.offsetMs} ms) failed: errno ${-ret}`, { errno: -ret });
  }

  async readPtp(device: string): Promise<number> {
    const fd = openSync(device, "r");
    try {
      // clock_gettime(2): a file descriptor's dynamic clock id is (~fd << 3) | CLOCKFD (3).
      return this.gettime((~fd << 3) | 3, device);
    } finally {
      closeSync(fd);
    }
  }

  async writeRtc(epochMs: number): Promise<void> {
    let fd: number;
    try {
      fd = openSync(RTC_DEVICE, "r");
    } catch (err) {
      throw new ClockError(`opening ${RTC_DEVICE} failed`, { device: RTC_DEVICE }, { cause: err });
    }
    try {
      const ret = this.calls.rtcSetTime(fd, rtcTimeFor(epochMs));
      if (ret !== 0)
        throw new ClockError(`RTC_SET_TIME on ${RTC_DEVICE} failed: errno ${-ret}`, {
          device: RTC_DEVICE,
          errno: -ret,
        });
    } finally {
      closeSync(fd);
    }
  }

  kernelState(): KernelTimeState {
    const buf = Buffer.alloc(TIMEX_SIZE);
    const state = this.calls.adjtimex(buf);
    if (state < 0) throw new ClockError(`adjtimex (read) failed: errno ${-state}`, { errno: -state });
    return kernelStateOf(state, buf);
  }

  private gettime(id: number, what: string): number {
    const ts = Buffer.alloc(16);
    const ret = this.calls.clockGettime(id, ts);
    if (ret !== 0) throw new ClockError(`clock_gettime(${what}) failed: errno ${-ret}`, { clock: what, errno: -ret });
    return Number(ts.readBigInt64LE(0)) * 1000 + Number(ts.readBigInt64LE(8)) / 1e6;
  }
}
