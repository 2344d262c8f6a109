// The IPv4/UDP broadcast a DHCPv4 client without an address sends through a packet socket.

import assert from "node:assert/strict";
import { test } from "node:test";
import { udp4BroadcastPacket } from "../../../agent/src/sys/packet-socket.js";

/** RFC 1071: the ones' complement sum of a region including its checksum is 0xffff when the checksum is right. */
function folded(...parts: Buffer[]): number {
  const all = Buffer.concat(parts);
  let sum = 0;
  for (let i = 0; i < all.length; i += 2) sum += all.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

test("udp4BroadcastPacket: 0.0.0.0:68 to 255.255.255.255:67, TTL 64, with correct IPv4 and UDP checksums", () => {
  const payload = Buffer.from("a DHCPDISCOVER of odd length");
  const p = udp4BroadcastPacket(68, 67, payload);
  assert.equal(p.length, 20 + 8 + payload.length);
  assert.deepEqual([p[0], p.readUInt16BE(2), p[8], p[9]], [0x45, p.length, 64, 17]);
  assert.deepEqual([...p.subarray(12, 16)], [0, 0, 0, 0]);
  assert.deepEqual([...p.subarray(16, 20)], [255, 255, 255, 255]);
  assert.equal(folded(p.subarray(0, 20)), 0xffff, "IPv4 header checksum");
  const udp = p.subarray(20);
  assert.deepEqual([udp.readUInt16BE(0), udp.readUInt16BE(2), udp.readUInt16BE(4)], [68, 67, 8 + payload.length]);
  assert.deepEqual(udp.subarray(8), payload);
  const pseudo = Buffer.from([0, 0, 0, 0, 255, 255, 255, 255, 0, 17, udp.length >> 8, udp.length & 0xff]);
  assert.equal(folded(pseudo, udp, Buffer.alloc(udp.length % 2)), 0xffff, "UDP checksum over the pseudo-header");
});
