// Link-layer broadcasts through a packet socket (Node has none, so libc through koffi):
// socket(AF_PACKET, SOCK_DGRAM, <ethertype>) and sendto the Ethernet broadcast address of
// one link, the kernel adding the Ethernet header. Used for gratuitous ARP and for DHCPv4
// broadcasts from a link without an address, as Talos's DHCP client sends them (no route
// needed, nothing else on the link sees a change).

import { SystemError } from "../errors.js";
import { type Koffi, loadKoffi } from "./koffi.js";

export class PacketSocketError extends SystemError {}

const AF_PACKET = 17;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;

/** struct sockaddr_ll for the Ethernet broadcast address on link `ifindex`. */
function broadcastAddress(ifindex: number, ethertype: number): Buffer {
  const a = Buffer.alloc(20);
  a.writeUInt16LE(AF_PACKET, 0);
  a.writeUInt16BE(ethertype, 2);
  a.writeInt32LE(ifindex, 4);
  a.writeUInt8(6, 11);
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).copy(a, 12);
  return a;
}

interface PacketCalls {
  socket(domain: number, type: number, protocol: number): number;
  sendto(fd: number, buf: Buffer, len: number, flags: number, addr: Buffer, addrlen: number): number;
  close(fd: number): number;
  errno(): number;
}

let calls: PacketCalls | undefined;

function packetCalls(): PacketCalls {
  if (calls) return calls;
  let koffi: Koffi;
  try {
    koffi = loadKoffi();
  } catch (err) {
    throw new PacketSocketError("packet sockets need the FFI library (koffi)", {}, { cause: err });
  }
  const libc = koffi.load("libc.so.6");
  const socket = libc.func("int socket(int domain, int type, int protocol)");
  const sendto = libc.func("long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)");
  const close = libc.func("int close(int fd)");
  calls = { socket: (d, t, p) => socket(d, t, p), sendto: (fd, b, l, f, a, al) => sendto(fd, b, l, f, a, al), close: (fd) => close(fd), errno: () => koffi.errno() };
  return calls;
}

/** Sends `payload` (the frame's content after the Ethernet header) to ff:ff:ff:ff:ff:ff on link `ifindex`. */
export function sendLinkBroadcast(ifindex: number, ethertype: number, payload: Buffer): void {
  const c = packetCalls();
  const fd = c.socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, ((ethertype & 0xff) << 8) | (ethertype >> 8));
  if (fd < 0) throw new PacketSocketError(`socket(AF_PACKET) failed: errno ${c.errno()}`, { errno: c.errno() });
  try {
    const addr = broadcastAddress(ifindex, ethertype);
    if (c.sendto(fd, payload, payload.length, 0, addr, addr.length) !== payload.length) {
      throw new PacketSocketError(`sending a broadcast (ethertype 0x${ethertype.toString(16)}) on link ${ifindex} failed: errno ${c.errno()}`, { errno: c.errno(), ifindex });
    }
  } finally {
    c.close(fd);
  }
}

/** The ones' complement sum of 16-bit words that IPv4 and UDP checksums use. */
function onesComplementSum(parts: Buffer[]): number {
  let sum = 0;
  for (const b of parts) {
    for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) | (i + 1 < b.length ? b[i + 1]! : 0);
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

/** An IPv4 datagram from 0.0.0.0 to 255.255.255.255 carrying one UDP packet (what a DHCP client without an address sends). */
export function udp4BroadcastPacket(srcPort: number, dstPort: number, payload: Buffer): Buffer {
  const src = Buffer.from([0, 0, 0, 0]);
  const dst = Buffer.from([255, 255, 255, 255]);
  const udp = Buffer.alloc(8 + payload.length);
  udp.writeUInt16BE(srcPort, 0);
  udp.writeUInt16BE(dstPort, 2);
  udp.writeUInt16BE(udp.length, 4);
  payload.copy(udp, 8);
  const pseudo = Buffer.concat([src, dst, Buffer.from([0, 17]), Buffer.from([udp.length >> 8, udp.length & 0xff])]);
  // A computed zero is sent as all ones (zero means "no checksum").
  udp.writeUInt16BE(~onesComplementSum([pseudo, udp]) & 0xffff || 0xffff, 6);
  const ip = Buffer.alloc(20);
  ip.writeUInt8(0x45, 0);
  ip.writeUInt16BE(20 + udp.length, 2);
  ip.writeUInt8(64, 8);
  ip.writeUInt8(17, 9);
  src.copy(ip, 12);
  dst.copy(ip, 16);
  ip.writeUInt16BE(~onesComplementSum([ip]) & 0xffff, 10);
  return Buffer.concat([ip, udp]);
}
