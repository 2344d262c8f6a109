// Gratuitous ARP: an ARP request for our own IPv4 address (sender and target both us)
// broadcast on a link, so neighbours update their tables at once, as Talos announces
// an address it takes over, sent through a packet socket (sys/packet-socket.ts).

import { SystemError } from "../errors.js";
import { ETH_P_ARP, ETH_P_IP, sendLinkBroadcast } from "./packet-socket.js";

export class ArpError extends SystemError {}

const ARPHRD_ETHER = 1;
const ARPOP_REQUEST = 1;

/** The 28-byte ARP payload announcing `ip` at `mac`. */
export function gratuitousArpPacket(mac: string, ip: string): Buffer {
  const hw = Buffer.from(mac.split(":").map((h) => parseInt(h, 16)));
  const proto = Buffer.from(ip.split(".").map(Number));
  if (hw.length !== 6 || proto.length !== 4)
    throw new ArpError(`cannot announce ${ip} at ${mac}: not IPv4 over Ethernet`, { ip, mac });
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

/** Broadcasts one gratuitous ARP for `ip` from `mac` on link `ifindex`. */
export function sendGratuitousArp(ifindex: number, mac: string, ip: string): void {
  sendLinkBroadcast(ifindex, ETH_P_ARP, gratuitousArpPacket(mac, ip));
}
