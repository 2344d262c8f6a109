// The base62 of Talos's node identities (github.com/jxskiss/base62's standard encoding): bits are
// taken six at a time from the end of the input, and a group whose value would be 62 or 63 gives
// up its top bit to the next one, so every symbol fits the 62-character alphabet.
import { InvalidInputError } from "../../errors.js";

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const compactMask = 0x1e;
const mask5 = 0x1f;
const mask6 = 0x3f;

/** The six bits that end at bit `pos` of `src` (bit 0 is the first byte's top bit). */
function sixBitsEndingAt(src: Uint8Array, pos: number): number {
  let r = pos & 7;
  let i = pos >> 3;
  if (r === 0) {
    i -= 1;
    r = 8;
  }
  let b = src[i]! >> (8 - r);
  if (r < 6 && i > 0) b |= src[i - 1]! << r;
  return b & mask6;
}

export function base62Encode(src: Uint8Array): string {
  let out = "";
  for (let pos = src.length * 8; pos > 0; ) {
    let size = 6;
    let b = sixBitsEndingAt(src, pos);
    if ((b & compactMask) === compactMask) {
      if (pos > 6 || b > mask5) size = 5;
      b &= mask5;
    }
    out += alphabet[b];
    pos -= size;
  }
  return out;
}

export function base62Decode(text: string): Buffer {
  const dst = Buffer.alloc(Math.floor((text.length * 6) / 8) + 1);
  let idx = dst.length;
  let bitPos = 0;
  let acc = 0;
  for (let i = 0; i < text.length; i++) {
    const x = alphabet.indexOf(text[i]!);
    if (x < 0) throw new InvalidInputError(`illegal base62 data at input byte ${i}`, { text });
    acc |= x << bitPos;
    // The last symbol holds only its significant bits; a compacted one five.
    bitPos += i === text.length - 1 ? (x === 0 ? 0 : 32 - Math.clz32(x)) : (x & compactMask) === compactMask ? 5 : 6;
    if (bitPos >= 8) {
      dst[--idx] = acc & 0xff;
      bitPos %= 8;
      acc >>= 8;
    }
  }
  if (bitPos > 0) dst[--idx] = acc & 0xff;
  return dst.subarray(idx);
}
