// Addresses inside a CIDR, as siderolabs/net's NthIPInNetwork: the masked base address
// plus n, refused when the subnet is too small to hold it.

import { InvalidInputError } from "../../errors.js";
import { ipBytes } from "../../resources/codec.js";
import { ipv6Text } from "../../sys/ip-text.js";

/** The n-th address after the subnet's base ("10.96.0.0/12", 10 -> "10.96.0.10"). */
export function nthAddress(cidr: string, n: number): string {
  const slash = cidr.lastIndexOf("/");
  const bits = Number(cidr.slice(slash + 1));
  const base = ipBytes(cidr.slice(0, slash));
  const width = base.length * 8;
  if (slash < 0 || !Number.isInteger(bits) || bits < 0 || bits > width)
    throw new InvalidInputError(`invalid CIDR ${JSON.stringify(cidr)}`, { cidr });
  let value = 0n;
  for (const b of base) value = (value << 8n) | BigInt(b);
  const hostBits = BigInt(width - bits);
  const masked = (value >> hostBits) << hostBits;
  if (BigInt(n) >= 1n << hostBits)
    throw new InvalidInputError(
      `failed to calculate offset ${n} from CIDR ${cidr}: network does not contain enough IPs`,
      { cidr },
    );
  let next = masked + BigInt(n);
  const out = Buffer.alloc(base.length);
  for (let i = out.length - 1; i >= 0; i--) {
    out[i] = Number(next & 0xffn);
    next >>= 8n;
  }
  return out.length === 4 ? [...out].join(".") : ipv6Text(out);
}
