import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decodeReply,
  encodeRequest,
  measure,
  NtpReplyMismatchError,
  NtpResponseError,
  readTimestamp,
  writeTimestamp,
} from "../../../agent/src/network/ntp/packet.js";
import { SpikeDetector } from "../../../agent/src/network/ntp/spike.js";

/** A server reply to `request`: received at t2, sent at t3 (Unix ms), stratum 2 unless given. */
function reply(
  request: Buffer,
  t2: number,
  t3: number,
  o: { stratum?: number; leap?: number; refId?: string; mode?: number } = {},
): Buffer {
  const buf = Buffer.alloc(48);
  buf[0] = ((o.leap ?? 0) << 6) | (4 << 3) | (o.mode ?? 4);
  buf[1] = o.stratum ?? 2;
  buf.write((o.refId ?? "GPS\0").padEnd(4, "\0"), 12, "latin1");
  writeTimestamp(buf, 16, t3 - 1000);
  request.copy(buf, 24, 40, 48);
  writeTimestamp(buf, 32, t2);
  writeTimestamp(buf, 40, t3);
  return buf;
}

test("NTP timestamps: Unix ms to the 64-bit NTP format and back, era 0 and era 1 (after 2036-02-07)", () => {
  const buf = Buffer.alloc(8);
  for (const ms of [1_700_000_000_000.5, 2_085_978_496_000 + 1234.25]) {
    writeTimestamp(buf, 0, ms);
    assert.ok(Math.abs(readTimestamp(buf, 0) - ms) < 1e-3, `${ms}`);
  }
  writeTimestamp(buf, 0, 0 - 2_208_988_800_000 + 1000);
  assert.equal(buf.readUInt32BE(0), 1);
});

test("an SNTP request is LI 0, version 4, mode 3, carrying its transmit time", () => {
  const req = encodeRequest(1_700_000_000_000);
  assert.equal(req.length, 48);
  assert.equal(req[0], 0x23);
  assert.equal(readTimestamp(req, 40), 1_700_000_000_000);
});

test("offset and round trip from the four timestamps: ((T2-T1)+(T3-T4))/2 and (T4-T1)-(T3-T2)", () => {
  const t1 = 1_700_000_000_000;
  const req = encodeRequest(t1);
  // The server is 5 s ahead; 20 ms each way, 2 ms in the server.
  const m = measure(decodeReply(reply(req, t1 + 5020, t1 + 5022)), req, t1, t1 + 42);
  assert.ok(Math.abs(m.offsetMs - 5000) < 1e-3, `${m.offsetMs}`);
  assert.ok(Math.abs(m.rttMs - 40) < 1e-3, `${m.rttMs}`);
  assert.equal(m.stratum, 2);
  assert.equal(m.leap, "none");
});

test("replies that must not be followed are refused with the reason; ones answering another request are mismatches", () => {
  const t1 = 1_700_000_000_000;
  const req = encodeRequest(t1);
  const check = (buf: Buffer) => measure(decodeReply(buf), req, t1, t1 + 10);
  assert.throws(
    () => check(reply(req, t1, t1, { stratum: 0, refId: "RATE" })),
    (e: Error) => e instanceof NtpResponseError && e.message === "kiss of death received: RATE",
  );
  assert.throws(
    () => check(reply(req, t1, t1, { stratum: 16 })),
    (e: Error) => e instanceof NtpResponseError && /invalid stratum 16/.test(e.message),
  );
  assert.throws(
    () => check(reply(req, t1, t1, { leap: 3 })),
    (e: Error) => e instanceof NtpResponseError && /not synchronized/.test(e.message),
  );
  assert.throws(() => check(reply(req, t1, t1, { mode: 5 })), NtpReplyMismatchError);
  assert.throws(() => check(reply(encodeRequest(t1 + 1), t1, t1)), NtpReplyMismatchError);
  assert.throws(() => decodeReply(Buffer.alloc(47)), NtpReplyMismatchError);
});

test("spike detector: steady samples are taken, jitter is their spread around the best round trip's offset", () => {
  const d = new SpikeDetector();
  for (let i = 0; i < 9; i++) assert.equal(d.isSpike({ offsetS: 0.001, rttS: 0.05 }), false);
  assert.equal(d.jitter, 0);
  // The next sample moves by far more than 3x that jitter: it counts in the jitter it is judged by (as in Talos).
  assert.equal(d.isSpike({ offsetS: 0.008, rttS: 0.05 }), false);
  assert.ok(Math.abs(d.jitter - 0.007 / Math.sqrt(7)) < 1e-12, `${d.jitter}`);
  // An offset beyond the round trip is always taken.
  assert.equal(d.isSpike({ offsetS: 0.2, rttS: 0.05 }), false);
});
