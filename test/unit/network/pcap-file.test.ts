import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { LINKTYPE_ETHERNET, pcapFileHeader, pcapRecord } from "../../../agent/src/network/pcap/file.js";

test("pcap global header: little-endian nanosecond magic, v2.4, zone/sigfigs 0, snap length, link type", () => {
  assert.equal(
    pcapFileHeader(4096, LINKTYPE_ETHERNET).toString("hex"),
    "4d3cb2a1" + "0200" + "0400" + "00000000" + "00000000" + "00100000" + "01000000",
  );
});

test("pcap record: seconds, nanoseconds, captured and original length, then the bytes", () => {
  const rec = pcapRecord({ timestampNs: 1_700_000_000_123_456_789n, length: 60, data: Buffer.from("abc") });
  assert.equal(rec.toString("hex"), "00f15365" + "15cd5b07" + "03000000" + "3c000000" + "616263");
});

test("pcap record: more captured bytes than the packet has is refused", () => {
  assert.throws(() => pcapRecord({ timestampNs: 0n, length: 2, data: Buffer.from("abc") }), InvalidInputError);
});
