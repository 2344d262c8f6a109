// The classic-BPF filter and the Ethernet/IPv4/TCP fields a journey asserts on in a PacketCapture.

export interface TcpSegment {
  srcPort: number;
  dstPort: number;
  /** The TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10). */
  flags: number;
}

export const TCP_SYN = 0x02;
export const TCP_ACK = 0x10;

/**
 * Classic BPF for "IPv4 TCP with port `port` on either side", hand-assembled as talosctl sends a compiled
 * filter: ldh [12]; jeq #0x800; ldb [23]; jeq #6; ldxb 4*([14]&0xf); ldh [x+14]; jeq #port; ldh [x+16];
 * jeq #port; ret #262144; ret #0.
 */
export function ipv4TcpPortFilter(port: number) {
  return [
    { op: 0x28, jt: 0, jf: 0, k: 12 },
    { op: 0x15, jt: 0, jf: 8, k: 0x800 },
    { op: 0x30, jt: 0, jf: 0, k: 23 },
    { op: 0x15, jt: 0, jf: 6, k: 6 },
    { op: 0xb1, jt: 0, jf: 0, k: 14 },
    { op: 0x48, jt: 0, jf: 0, k: 14 },
    { op: 0x15, jt: 2, jf: 0, k: port },
    { op: 0x48, jt: 0, jf: 0, k: 16 },
    { op: 0x15, jt: 0, jf: 1, k: port },
    { op: 0x6, jt: 0, jf: 0, k: 0x40000 },
    { op: 0x6, jt: 0, jf: 0, k: 0 },
  ];
}

/** The TCP header's ports and flags of an Ethernet frame, or undefined when it is not IPv4 TCP. */
export function tcpSegment(frame: Buffer): TcpSegment | undefined {
  if (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800 || frame[23] !== 6) return undefined;
  const tcp = 14 + (frame[14]! & 0x0f) * 4;
  if (frame.length < tcp + 14) return undefined;
  return { srcPort: frame.readUInt16BE(tcp), dstPort: frame.readUInt16BE(tcp + 2), flags: frame[tcp + 13]! };
}
