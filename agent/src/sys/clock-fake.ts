import type { ClockAdjustment, SystemClock } from "./clock.js";

/**
 * A clock that keeps its own offset from the host's and never changes the host:
 * for the sandbox and tests. Slews apply at once (there is no PLL to run them).
 * PTP devices answer with the host time plus the offset given for them.
 */
export class FakeClock implements SystemClock {
  readonly adjustments: ClockAdjustment[] = [];
  /** What was written to the RTC (never the host's). */
  readonly rtcWrites: number[] = [];

  constructor(
    private offsetMs = 0,
    private readonly ptpOffsetsMs: ReadonlyMap<string, number> = new Map(),
  ) {}

  /** How far this clock is from the host's. */
  get offset(): number {
    return this.offsetMs;
  }

  now(): number {
    return performance.timeOrigin + performance.now() + this.offsetMs;
  }

  async adjust(adjustment: ClockAdjustment): Promise<void> {
    this.adjustments.push(adjustment);
    this.offsetMs += adjustment.offsetMs;
  }

  async readPtp(device: string): Promise<number> {
    const offset = this.ptpOffsetsMs.get(device);
    if (offset === undefined) throw Object.assign(new Error(`open ${device}: no such file or directory`), { code: "ENOENT" });
    return performance.timeOrigin + performance.now() + offset;
  }

  async writeRtc(epochMs: number): Promise<void> {
    this.rtcWrites.push(epochMs);
  }
}
