// The system clock as the time sync sees it: read the time, and step or slew it
// (adjtimex's ADJ_SETOFFSET and ADJ_OFFSET+STA_PLL, as Talos's SNTP client asks for),
// and read a PTP hardware clock. Kept narrow so the syncer is tested against a
// fake, and so a sandbox never touches the host's clock.

export type LeapIndicator = "none" | "insert" | "delete";

/** A jump of the clock by offsetMs (Talos: |offset| > 400 ms). */
export interface ClockStep {
  kind: "step";
  offsetMs: number;
  leap: LeapIndicator;
}

/** A gradual correction of offsetMs by the kernel PLL with time constant `timeConstant` (log2(poll s) - 4). */
export interface ClockSlew {
  kind: "slew";
  offsetMs: number;
  timeConstant: number;
  leap: LeapIndicator;
}

export type ClockAdjustment = ClockStep | ClockSlew;

/** The kernel's clock discipline, as adjtimex(2) reports it when asked to change nothing. */
export interface KernelTimeState {
  /** adjtimex's return: TIME_OK 0, TIME_INS 1, TIME_DEL 2, TIME_OOP 3, TIME_WAIT 4, TIME_ERROR 5. */
  state: number;
  /** struct timex's offset: nanoseconds when status has STA_NANO, else microseconds. */
  offset: number;
  /** Frequency offset in ppm with a 16-bit fraction. */
  freq: number;
  maxErrorUs: number;
  estErrorUs: number;
  /** STA_* bits. */
  status: number;
  /** The PLL time constant. */
  constant: number;
}

export interface SystemClock {
  /** Wall-clock time in milliseconds since the Unix epoch (fractional). */
  now(): number;
  adjust(adjustment: ClockAdjustment): Promise<void>;
  /** The time a PTP hardware clock (/dev/ptpN) holds, in milliseconds since the Unix epoch. */
  readPtp(device: string): Promise<number>;
  /** Sets the battery-backed clock (/dev/rtc0, kept in UTC) to epochMs, as Talos does after a step. */
  writeRtc(epochMs: number): Promise<void>;
  kernelState(): KernelTimeState;
}
