// The libpcap file format as Talos v1.7 streams it from PacketCapture: little-endian, version 2.4,
// nanosecond timestamps (magic 0xa1b23c4d), zone and sigfigs 0, the snap length and link type in the
// global header; each record a 16-byte header (seconds, nanoseconds, captured and original length)
// and the captured bytes.

import { InvalidInputError } from "../../errors.js";
import type { CapturedPacket } from "../../sys/packet-capture.js";

export const PCAP_MAGIC_NANOSECONDS = 0xa1b23c4d;
/** LINKTYPE_ETHERNET: Ethernet and loopback links. */
export const LINKTYPE_ETHERNET = 1;
/** LINKTYPE_RAW: links without a link-layer header (ARPHRD_NONE, e.g. WireGuard). */
export const LINKTYPE_RAW = 101;

/** The 24-byte global header. */
export function pcapFileHeader(snapLength: number, linkType: number): Buffer {
  const b = Buffer.alloc(24);
  b.writeUInt32LE(PCAP_MAGIC_NANOSECONDS, 0);
  b.writeUInt16LE(2, 4);
  b.writeUInt16LE(4, 6);
  b.writeUInt32LE(snapLength, 16);
  b.writeUInt32LE(linkType, 20);
  return b;
}

/** One record: its header and captured bytes. */
export function pcapRecord(p: CapturedPacket): Buffer {
  if (p.data.length > p.length) {
    throw new InvalidInputError(`captured ${p.data.length} bytes of a ${p.length}-byte packet`, {
      captured: p.data.length,
      length: p.length,
    });
  }
  const h = Buffer.alloc(16);
  h.writeUInt32LE(Number((p.timestampNs / 1_000_000_000n) & 0xffffffffn), 0);
  h.writeUInt32LE(Number(p.timestampNs % 1_000_000_000n), 4);
  h.writeUInt32LE(p.data.length, 8);
  h.writeUInt32LE(p.length, 12);
  return Buffer.concat([h, p.data]);
}
