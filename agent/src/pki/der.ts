// The few DER (X.690) encodings an X.509 certificate needs, and a reader for the
// TLVs of one, so certificates signed by an Ed25519 key can be built and read with
// node:crypto alone, without loading @peculiar/x509 and its ASN.1 schemas.
import { InvalidInputError } from "../errors.js";

/** Tag, length and contents. */
export function tlv(tag: number, contents: Buffer): Buffer {
  const n = contents.length;
  let length: Buffer;
  if (n < 0x80) length = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, contents]);
}

export const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
/** [n] EXPLICIT (constructed). */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);
/** [n] IMPLICIT of a primitive type. */
export const implicitPrimitive = (n: number, contents: Buffer): Buffer => tlv(0x80 | n, contents);
export const octetString = (contents: Buffer): Buffer => tlv(0x04, contents);
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
/** A BIT STRING of whole bytes (keys, signatures). */
export const bitString = (contents: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), contents]));

/** An INTEGER from unsigned big-endian bytes, in DER's minimal two's-complement form. */
export function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : Buffer.from(trimmed));
}

export const smallInteger = (value: number): Buffer => unsignedInteger(Buffer.from([value]));

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  const out: number[] = [arcs[0]! * 40 + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift(0x80 | (v & 0x7f));
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

/** PrintableString when every character is allowed there, UTF8String otherwise (as Go and @peculiar/x509 choose). */
export function directoryString(value: string): Buffer {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(value)
    ? tlv(0x13, Buffer.from(value, "latin1"))
    : tlv(0x0c, Buffer.from(value, "utf8"));
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), to the second. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "") + "Z";
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), "latin1"))
    : tlv(0x18, Buffer.from(digits, "latin1"));
}

/** One TLV read from DER: its tag, its contents and the whole encoding. */
export interface DerElement {
  tag: number;
  contents: Buffer;
  encoded: Buffer;
}

/** The element at `offset` of `der`. */
export function readElement(der: Buffer, offset = 0): DerElement {
  const tag = der[offset];
  let lengthByte = der[offset + 1];
  if (tag === undefined || lengthByte === undefined) throw new InvalidInputError("truncated DER");
  let start = offset + 2;
  let length = lengthByte;
  if (lengthByte & 0x80) {
    const count = lengthByte & 0x7f;
    if (count === 0 || count > 4) throw new InvalidInputError("unsupported DER length");
    length = 0;
    for (let i = 0; i < count; i++) {
      lengthByte = der[start + i];
      if (lengthByte === undefined) throw new InvalidInputError("truncated DER");
      length = length * 256 + lengthByte;
    }
    start += count;
  }
  if (start + length > der.length) throw new InvalidInputError("truncated DER");
  return { tag, contents: der.subarray(start, start + length), encoded: der.subarray(offset, start + length) };
}

/** The elements inside a constructed element. */
export function children(element: DerElement): DerElement[] {
  const out: DerElement[] = [];
  for (let offset = 0; offset < element.contents.length; ) {
    const child = readElement(element.contents, offset);
    out.push(child);
    offset += child.encoded.length;
  }
  return out;
}
