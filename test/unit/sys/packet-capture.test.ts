import assert from "node:assert/strict";
import { test } from "node:test";
import { FrameDecoder, sockFilterProgram } from "../../../agent/src/sys/packet-capture.js";

test("sock_filter program: u16 code, u8 jt, u8 jf, u32 k per instruction", () => {
  // tcpdump -dd 'udp': { 0x28, 0, 0, 0x0000000c }, { 0x15, 0, 5, 0x000086dd }
  const b = sockFilterProgram([
    { op: 0x28, jt: 0, jf: 0, k: 0x0c },
    { op: 0x15, jt: 0, jf: 5, k: 0x86dd },
  ]);
  assert.equal(b.toString("hex"), "280000000c000000" + "15000005dd860000");
});

function frame(ts: bigint, length: number, data: Buffer): Buffer {
  const h = Buffer.alloc(16);
  h.writeBigUInt64LE(ts, 0);
  h.writeUInt32LE(length, 8);
  h.writeUInt32LE(data.length, 12);
  return Buffer.concat([h, data]);
}

test("frame decoder: frames split across chunks at any byte come out whole and in order", () => {
  const stream = Buffer.concat([
    frame(5n, 100, Buffer.from("abcdef")),
    frame(6n, 3, Buffer.from("xyz")),
    frame(7n, 0, Buffer.alloc(0)),
  ]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const d = new FrameDecoder();
    const out = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
    assert.deepEqual(
      out.map((p) => [p.timestampNs, p.length, p.data.toString()]),
      [
        [5n, 100, "abcdef"],
        [6n, 3, "xyz"],
        [7n, 0, ""],
      ],
      `cut at ${cut}`,
    );
  }
});
