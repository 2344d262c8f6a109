// Byte-level rewriting apid uses for one-to-many replies (reference §3): every
// Talos reply is `{ repeated Msg messages = 1 }` and every Msg and every streamed
// message has `common.Metadata metadata = 1`, so appending an encoded
// `{ metadata: { hostname, error, status } }` to a message merges into its metadata.

import { InvalidInputError } from "../errors.js";

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

function readVarint(buf: Buffer, pos: number): [number, number] {
  let result = 0;
  let mul = 1;
  for (let i = pos; i < buf.length && i < pos + 10; i++) {
    const b = buf[i]!;
    result += (b & 0x7f) * mul;
    mul *= 128;
    if ((b & 0x80) === 0) return [result, i + 1];
  }
  throw new InvalidInputError("malformed varint in reply");
}

function lengthDelimited(field: number, payload: Buffer): Buffer {
  return Buffer.concat([varint((field << 3) | 2), varint(payload.length), payload]);
}

export interface NodeMetadata {
  hostname: string;
  error?: string;
  /** google.rpc.Status code and message, as apid reports a failed backend. */
  status?: { code: number; message: string };
}

/** Encodes `{ metadata = 1: common.Metadata }` (the shape of common.Empty). */
export function encodeMetadataMessage(md: NodeMetadata): Buffer {
  const parts: Buffer[] = [lengthDelimited(1, Buffer.from(md.hostname, "utf8"))];
  if (md.error) parts.push(lengthDelimited(2, Buffer.from(md.error, "utf8")));
  if (md.status) {
    const st: Buffer[] = [];
    if (md.status.code) st.push(Buffer.concat([varint(1 << 3), varint(md.status.code)]));
    if (md.status.message) st.push(lengthDelimited(2, Buffer.from(md.status.message, "utf8")));
    parts.push(lengthDelimited(3, Buffer.concat(st)));
  }
  return lengthDelimited(1, Buffer.concat(parts));
}

/** Appends node metadata to a streamed message (field 1 of every streamed type is metadata). */
export function tagStreamMessage(message: Buffer, hostname: string): Buffer {
  return Buffer.concat([message, encodeMetadataMessage({ hostname })]);
}

/**
 * Rewrites a unary reply that holds exactly one `messages` element so the
 * element carries `metadata.hostname`; the results of several nodes concatenate
 * into one valid reply.
 */
export function tagUnaryReply(reply: Buffer, hostname: string): Buffer {
  if (reply.length === 0 || reply[0] !== 0x0a) {
    throw new InvalidInputError("reply is not a single messages element; it cannot be tagged with node metadata");
  }
  const [len, start] = readVarint(reply, 1);
  if (start + len !== reply.length) {
    throw new InvalidInputError("reply holds more than one messages element; it cannot be tagged with node metadata");
  }
  const element = reply.subarray(start);
  return lengthDelimited(1, Buffer.concat([element, encodeMetadataMessage({ hostname })]));
}

/** The reply contributed by a node whose call failed: `{ messages: [{ metadata: {...} }] }`. */
export function failedNodeReply(md: NodeMetadata): Buffer {
  return lengthDelimited(1, encodeMetadataMessage(md));
}
