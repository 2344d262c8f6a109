// The kernel capture source on its own (the addon's socket setup and the reader's lifetime), on the loopback
// link (index 1) of the test's namespace: each setup step's errno, a reader that fails mid-capture, and a
// capture closed while nobody reads it.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import {
  kernelPacketCaptureSource,
  locateCaptureReader,
  PacketCaptureReadError,
  PacketCaptureSetupError,
  type CaptureRequest,
} from "../../agent/src/sys/packet-capture.js";
import { canRunNetns } from "./helpers/netns.js";

const skip = canRunNetns();
const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-pcap-source-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const lo: CaptureRequest = { ifindex: 1, promiscuous: false, snapLength: 4096, filter: [] };

/** Whether a process is still there (a zombie counts as gone: its socket is closed). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

test("each setup step's failure names its step and errno", { skip }, () => {
  const source = kernelPacketCaptureSource();
  assert.throws(
    () => source.open({ ...lo, filter: [{ op: 0x15, jt: 5, jf: 0, k: 0 }] }),
    (e: unknown) => e instanceof PacketCaptureSetupError && e.step === "filter" && e.errno === "EINVAL",
  );
  // No link has this index.
  assert.throws(
    () => source.open({ ...lo, ifindex: 0x7ffffff0 }),
    (e: unknown) => e instanceof PacketCaptureSetupError && e.step === "bind" && e.errno === "ENODEV",
  );
  assert.throws(
    () => source.open({ ...lo, ifindex: 0x7ffffff0, promiscuous: true }),
    (e: unknown) => e instanceof PacketCaptureSetupError && e.step === "promiscuous" && e.errno === "ENODEV",
  );
});

test("a reader that fails mid-capture ends the packets with its words", { skip }, async () => {
  // A stand-in reader: one frame (timestamp 7 ns, length 60, 3 bytes), then a failure on stderr.
  const fake = path.join(dir, "failing-reader");
  writeFileSync(
    fake,
    `#!${process.execPath}
const h = Buffer.alloc(16); h.writeBigUInt64LE(7n, 0); h.writeUInt32LE(60, 8); h.writeUInt32LE(3, 12);
process.stdout.write(Buffer.concat([h, Buffer.from("abc")]), () => { process.stderr.write("reading the packet socket: boom\\n"); process.exit(1); });
`,
  );
  chmodSync(fake, 0o755);
  const capture = kernelPacketCaptureSource(() => fake).open(lo);
  const got: { timestampNs: bigint; length: number; data: string }[] = [];
  await assert.rejects(
    (async () => {
      for await (const p of capture.packets())
        got.push({ timestampNs: p.timestampNs, length: p.length, data: p.data.toString() });
    })(),
    (e: unknown) =>
      e instanceof PacketCaptureReadError &&
      e.message === "the packet capture reader failed: reading the packet socket: boom",
  );
  assert.deepEqual(got, [{ timestampNs: 7n, length: 60, data: "abc" }]);
  await capture.close();
});

test("a capture closed while nobody reads it takes its reader with it", { skip }, async () => {
  const before = new Set(readerPids());
  const capture = kernelPacketCaptureSource().open(lo);
  const started = readerPids().filter((p) => !before.has(p));
  assert.equal(started.length, 1);
  await capture.close();
  assert.equal(running(started[0]!), false);
  // Its packets end, no error: the caller closed it.
  for await (const p of capture.packets()) assert.fail(`a packet after close: ${p.length} bytes`);
});

/** This process's capture readers. */
function readerPids(): number[] {
  const reader = locateCaptureReader();
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return (
          readlinkSync(`/proc/${p}/exe`) === reader &&
          new RegExp(`^PPid:\\s+${process.pid}$`, "m").test(readFileSync(`/proc/${p}/status`, "utf8"))
        );
      } catch {
        return false; // gone while looking
      }
    })
    .map(Number);
}
