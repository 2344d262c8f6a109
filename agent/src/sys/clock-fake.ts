import type { ClockAdjustment, KernelTimeState, SystemClock } from "./clock.js";

/**
 * A clock that keeps its own offset from the host's and never changes the host:
 * for the sandbox and tests. Slews apply at once (there is no PLL to run them).
 * PTP devices answer with the host time plus the offset given for them.
 */
export class FakeClock implements SystemClock {
  readonly adjustments: ClockAdjustment[] = [];
  /** What was written to the RTC (never the host's). */
  readonly rtcWrites: number[] = [];
  /** What kernelState() reports; by default a kernel's at boot (unsynchronized, 16 s error bounds). */
  state: KernelTimeState = {
    state: 5,
    offset: 0,
    freq: 0,
    maxErrorUs: 16_000_000,
    estErrorUs: 16_000_000,
    status: 0x40,
    constant: 2,
  };

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
    if (offset === undefined)
      throw Object.assign(new Error(`open ${device}: no such file or directory`), { code: "ENOENT" });
    return performance.timeOrigin + performance.now() + offset;
  }

  async writeRtc(epochMs: number): Promise<void> {
    this.rtcWrites.push(epochMs);
  }

  kernelState(): KernelTimeState {
    return this.state;
  }
}
