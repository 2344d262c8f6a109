import assert from "node:assert/strict";
import { test } from "node:test";
import type { NtpMeasurement } from "../../../agent/src/network/ntp/packet.js";
import { NtpSyncer } from "../../../agent/src/network/ntp/syncer.js";
import { FakeClock } from "../../../agent/src/sys/clock-fake.js";

function answers(offsets: Record<string, number[]>) {
  const asked: string[] = [];
  const query = async (address: string): Promise<NtpMeasurement> => {
    asked.push(address);
    const next = offsets[address]?.shift();
    if (next === undefined) throw new Error(`${address}: no answer`);
    return { offsetMs: next, rttMs: 1, leap: "none", stratum: 2, serverTime: 0 };
  };
  return { asked, query };
}

test("syncer: steps beyond 400 ms, slews below (time constant from the next poll), reports the first sync once and a >15 min change as an epoch", async () => {
  const clock = new FakeClock();
  const hostBefore = performance.timeOrigin + performance.now();
  const { asked, query } = answers({ "192.0.2.1": [5000, 10, -(20 * 60_000), 3] });
  let synced = 0;
  let epochs = 0;
  const ac = new AbortController();
  const syncer = new NtpSyncer({
    clock,
    servers: ["192.0.2.1"],
    query,
    minPollMs: 32,
    maxPollMs: 2048,
    retryPollMs: 1,
    onSynced: () => synced++,
    onEpochChange: () => epochs++,
  });
  const run = syncer.run(ac.signal);
  while (clock.adjustments.length < 4) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await run;
  assert.deepEqual(clock.adjustments.slice(0, 4), [
    { kind: "step", offsetMs: 5000, leap: "none" },
    // 10 ms < 50 ms: the poll doubles from 32 to 64 "s"; log2(0) floors to the 1 s minimum: 0 - 4.
    { kind: "slew", offsetMs: 10, timeConstant: -4, leap: "none" },
    { kind: "step", offsetMs: -(20 * 60_000), leap: "none" },
    { kind: "slew", offsetMs: 3, timeConstant: -4, leap: "none" },
  ]);
  assert.equal(synced, 1);
  assert.equal(epochs, 1);
  // The two steps, and only they, were written to the RTC, each with the clock as it stood after the step.
  assert.equal(clock.rtcWrites.length, 2);
  const hostAfter = performance.timeOrigin + performance.now();
  const within = (written: number, offsetMs: number) =>
    written >= hostBefore + offsetMs && written <= hostAfter + offsetMs;
  assert.ok(within(clock.rtcWrites[0]!, 5000), "the clock 5 s ahead");
  assert.ok(within(clock.rtcWrites[1]!, 5000 - 20 * 60_000), "then 20 min behind that");
  assert.equal(syncer.currentServer, "192.0.2.1");
  assert.deepEqual(asked.slice(0, 4), ["192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1"]);
});

test("syncer: a failing server is skipped for the next; names resolve to every address; a new server list restarts at once", async () => {
  const clock = new FakeClock();
  const { asked, query } = answers({ "192.0.2.2": [700], "198.51.100.7": [900] });
  const ac = new AbortController();
  const syncer = new NtpSyncer({
    clock,
    servers: ["ntp.example.org"],
    query,
    minPollMs: 60_000,
    retryPollMs: 60_000,
    resolve: async (name) => (name === "ntp.example.org" ? ["192.0.2.1", "192.0.2.2"] : []),
    onSynced: () => undefined,
    onEpochChange: () => undefined,
  });
  const run = syncer.run(ac.signal);
  while (clock.adjustments.length < 1) await new Promise((r) => setTimeout(r, 5));
  assert.equal(syncer.currentServer, "192.0.2.2");
  // The syncer now sleeps for a minute; new servers wake it.
  syncer.setServers(["198.51.100.7"]);
  while (clock.adjustments.length < 2) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await run;
  assert.deepEqual(asked, ["192.0.2.1", "192.0.2.2", "198.51.100.7"]);
  assert.deepEqual(
    clock.adjustments.map((a) => a.offsetMs),
    [700, 900],
  );
  assert.equal(syncer.currentServer, "198.51.100.7");
});

test("syncer: a PTP device (/dev/...) is read as a clock and followed", async () => {
  const clock = new FakeClock(0, new Map([["/dev/ptp0", 2000]]));
  const ac = new AbortController();
  const syncer = new NtpSyncer({
    clock,
    servers: ["/dev/ptp1", "/dev/ptp0"],
    minPollMs: 60_000,
    onSynced: () => ac.abort(),
    onEpochChange: () => undefined,
  });
  await syncer.run(ac.signal);
  assert.equal(clock.adjustments.length, 1);
  assert.equal(clock.adjustments[0]!.kind, "step");
  assert.ok(Math.abs(clock.adjustments[0]!.offsetMs - 2000) < 50, `${clock.adjustments[0]!.offsetMs}`);
  assert.equal(syncer.currentServer, "/dev/ptp0");
});
