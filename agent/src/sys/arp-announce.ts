// Gratuitous ARP: an ARP request for our own IPv4 address (sender and target both us)
// broadcast on a link, so neighbours update their tables at once, as Talos announces
// an address it takes over. Node has no packet sockets, so this goes through libc
// (koffi): socket(AF_PACKET, SOCK_DGRAM, ETH_P_ARP) and sendto the broadcast address.

import { SystemError } from "../errors.js";
import { type Koffi, loadKoffi } from "./koffi.js";

export class ArpError extends SystemError {}

const AF_PACKET = 17;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const ETH_P_ARP = 0x0806;
const ETH_P_IP = 0x0800;
const ARPHRD_ETHER = 1;
const ARPOP_REQUEST = 1;

/** The 28-byte ARP payload announcing `ip` at `mac`. */
export function gratuitousArpPacket(mac: string, ip: string): Buffer {
  const hw = Buffer.from(mac.split(":").map((h) => parseInt(h, 16)));
  const proto = Buffer.from(ip.split(".").map(Number));
  if (hw.length !== 6 || proto.length !== 4) throw new ArpError(`cannot announce ${ip} at ${mac}: not IPv4 over Ethernet`, { ip, mac });
  const p = Buffer.alloc(28);
  p.writeUInt16BE(ARPHRD_ETHER, 0);
  p.writeUInt16BE(ETH_P_IP, 2);
  p.writeUInt8(6, 4);
  p.writeUInt8(4, 5);
  p.writeUInt16BE(ARPOP_REQUEST, 6);
  hw.copy(p, 8);
  proto.copy(p, 14);
  hw.copy(p, 18);
  proto.copy(p, 24);
  return p;
}

/** struct sockaddr_ll for the Ethernet broadcast address on link `ifindex`. */
function broadcastAddress(ifindex: number): Buffer {
  const a = Buffer.alloc(20);
  a.writeUInt16LE(AF_PACKET, 0);
  a.writeUInt16BE(ETH_P_ARP, 2);
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
    throw new ArpError("gratuitous ARP needs the FFI library (koffi)", {}, { cause: err });
  }
  const libc = koffi.load("libc.so.6");
  const socket = libc.func("int socket(int domain, int type, int protocol)");
  const sendto = libc.func("long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)");
  const close = libc.func("int close(int fd)");
  calls = { socket: (d, t, p) => socket(d, t, p), sendto: (fd, b, l, f, a, al) => sendto(fd, b, l, f, a, al), close: (fd) => close(fd), errno: () => koffi.errno() };
  return calls;
}

/** Broadcasts one gratuitous ARP for `ip` from `mac` on link `ifindex`. */
export function sendGratuitousArp(ifindex: number, mac: string, ip: string): void {
  const packet = gratuitousArpPacket(mac, ip);
  const c = packetCalls();
  const fd = c.socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, ((ETH_P_ARP & 0xff) << 8) | (ETH_P_ARP >> 8));
  if (fd < 0) throw new ArpError(`socket(AF_PACKET) failed: errno ${c.errno()}`, { errno: c.errno() });
  try {
    const addr = broadcastAddress(ifindex);
    if (c.sendto(fd, packet, packet.length, 0, addr, addr.length) !== packet.length) {
      throw new ArpError(`sending gratuitous ARP for ${ip} on link ${ifindex} failed: errno ${c.errno()}`, { errno: c.errno(), ip, ifindex });
    }
  } finally {
    c.close(fd);
  }
}
