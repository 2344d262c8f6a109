// Link-layer broadcasts through a packet socket (Node has none, so the project's kernel-calls addon):
// socket(AF_PACKET, SOCK_DGRAM, <ethertype>) and sendto the Ethernet broadcast address of
// one link, the kernel adding the Ethernet header. Used for gratuitous ARP and for DHCPv4
// broadcasts from a link without an address, as Talos's DHCP client sends them (no route
// needed, nothing else on the link sees a change).

import { SystemError } from "../errors.js";
import { type KernelCalls, locateKernelCalls } from "./kernel-calls.js";

export class PacketSocketError extends SystemError {}

export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;

let calls: KernelCalls | undefined;

/** Sends `payload` (the frame's content after the Ethernet header) to ff:ff:ff:ff:ff:ff on link `ifindex`. */
export function sendLinkBroadcast(ifindex: number, ethertype: number, payload: Buffer): void {
  try {
    calls ??= locateKernelCalls()();
  } catch (err) {
    throw new PacketSocketError("packet sockets need the kernel-calls addon", {}, { cause: err });
  }
  const sent = calls.packetBroadcast(ifindex, ethertype, payload);
  if (sent !== payload.length) {
    const errno = sent < 0 ? -sent : 0;
    throw new PacketSocketError(
      `sending a broadcast (ethertype 0x${ethertype.toString(16)}) on link ${ifindex} failed: ${sent < 0 ? `errno ${errno}` : `${sent} of ${payload.length} bytes sent`}`,
      { errno, ifindex },
    );
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
