// Whether an IP prefix (CIDR) holds an address, as Go's netip.Prefix.Contains: an
// address of the other family is never held.

import { ipBytes } from "../resources/codec.js";

export function prefixContains(prefix: string, address: string): boolean {
  const slash = prefix.lastIndexOf("/");
  const net = ipBytes(prefix.slice(0, slash));
  const bits = Number(prefix.slice(slash + 1));
  const ip = ipBytes(address);
  if (net.length !== ip.length) return false;
  for (let i = 0; i < net.length && bits - i * 8 > 0; i++) {
    const mask = bits - i * 8 >= 8 ? 0xff : (0xff << (8 - (bits - i * 8))) & 0xff;
    if ((net[i]! & mask) !== (ip[i]! & mask)) return false;
  }
  return true;
}
