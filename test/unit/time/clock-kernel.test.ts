import assert from "node:assert/strict";
import { test } from "node:test";
import { locateKernelCalls } from "../../../agent/src/sys/kernel-calls.js";
import { KernelClock, kernelStateOf, rtcTimeFor, timexFor } from "../../../agent/src/sys/clock-kernel.js";

test("adjtimex requests as Talos builds them: a step is ADJ_SETOFFSET|NANO with a positive nanosecond part, a slew ADJ_OFFSET with the PLL", () => {
  const step = timexFor({ kind: "step", offsetMs: -1500.25, leap: "insert" });
  assert.equal(step.length, 208);
  assert.equal(step.readUInt32LE(0), 0x0100 | 0x2000 | 0x0010 | 0x0004 | 0x0008);
  assert.equal(step.readBigInt64LE(72), -2n);
  assert.equal(step.readBigInt64LE(80), 499_750_000n);
  assert.equal(step.readInt32LE(40), 0x0010);
  const slew = timexFor({ kind: "slew", offsetMs: 12.5, timeConstant: 1, leap: "none" });
  assert.equal(slew.readUInt32LE(0), 0x0001 | 0x2000 | 0x0010 | 0x0020 | 0x0004 | 0x0008);
  assert.equal(slew.readBigInt64LE(8), 12_500_000n);
  assert.equal(slew.readInt32LE(40), 0x0001);
  assert.equal(slew.readBigInt64LE(48), 1n);
});

test("the kernel clock reads CLOCK_REALTIME (never adjusted here) and reports a missing PTP device", async () => {
  const clock = KernelClock.load();
  const before = Date.now();
  const now = clock.now();
  const after = Date.now();
  assert.ok(now >= before - 1 && now <= after + 1, `${before} <= ${now} <= ${after}`);
  await assert.rejects(clock.readPtp("/dev/ptp-basalt-none"), /ENOENT/);
});

test("RTC_SET_TIME's struct rtc_time: UTC fields, month from 0, years since 1900, weekday and day of year", () => {
  const buf = rtcTimeFor(Date.UTC(2026, 10, 24, 14, 50, 7, 900));
  assert.equal(buf.length, 36);
  assert.deepEqual(
    Array.from({ length: 9 }, (_, i) => buf.readInt32LE(i * 4)),
    [7, 50, 14, 24, 10, 126, 2, 327, 0],
  );
  const leapDay = rtcTimeFor(Date.UTC(2028, 1, 29, 0, 0, 0));
  assert.deepEqual([leapDay.readInt32LE(12), leapDay.readInt32LE(16), leapDay.readInt32LE(28)], [29, 1, 59]);
});

test("the clock addon itself on this host: clock_gettime(CLOCK_REALTIME) fills a timespec, a read-only adjtimex a state and struct timex", () => {
  const addon = locateKernelCalls()();
  const ts = Buffer.alloc(16);
  const before = Date.now();
  assert.equal(addon.clockGettime(0, ts), 0);
  const after = Date.now();
  const ms = Number(ts.readBigInt64LE(0)) * 1000 + Number(ts.readBigInt64LE(8)) / 1e6;
  assert.ok(ms >= before - 1000 && ms <= after + 1000, `${before} <= ${ms} <= ${after} (within a second)`);
  assert.ok(ts.readBigInt64LE(8) >= 0n && ts.readBigInt64LE(8) < 1_000_000_000n);
  assert.equal(addon.clockGettime(-1_000_000, ts), -22, "an unknown clock id is EINVAL, as -errno");

  // modes 0 changes nothing; the kernel fills the rest over the 0xa5 filler: tolerance (offset 64) is
  // MAXFREQ's 500 ppm << 16, time (72) now, tick (88) USER_HZ's 10000 us, on every Linux.
  const tx = Buffer.alloc(208, 0xa5);
  tx.writeUInt32LE(0, 0);
  const state = addon.adjtimex(tx);
  assert.ok(Number.isInteger(state) && state >= 0 && state <= 5, `state ${state}`);
  assert.equal(tx.readBigInt64LE(64), 32_768_000n);
  assert.ok(
    Math.abs(Number(tx.readBigInt64LE(72)) - Date.now() / 1000) <= 1,
    `time ${tx.readBigInt64LE(72)} within a second of now`,
  );
  assert.equal(tx.readBigInt64LE(88), 10_000n);
  assert.equal(tx.readUInt32LE(0), 0, "modes stays 0");
  assert.equal(kernelStateOf(state, tx).status & ~0xffff, 0, "status holds only STA_ bits");

  assert.throws(() => addon.adjtimex(Buffer.alloc(16)), TypeError, "a buffer shorter than struct timex is refused");
});
