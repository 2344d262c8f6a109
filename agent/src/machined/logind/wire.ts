// The D-Bus wire protocol from the bus's side: the SASL exchange a client opens with, then
// length-framed messages, marshalled by dbus-next (its marshaller, not its client connection).

import { randomBytes } from "node:crypto";
import { marshallMessage, messageToJsFmt } from "dbus-next/lib/marshall-compat.js";
import DBusBuffer from "dbus-next/lib/dbus-buffer.js";
import { BasaltError } from "../../errors.js";

/** A client broke the protocol (bad SASL line, unparsable message): its connection is dropped. */
export class DBusProtocolError extends BasaltError {}

export const MessageType = { methodCall: 1, methodReturn: 2, error: 3, signal: 4 } as const;
export const NO_REPLY_EXPECTED = 1;

/** One message; `body` in dbus-next's JS form (Variant for `v`, fd numbers for `h`). */
export interface BusMessage {
  type: number;
  flags?: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  signature?: string;
  body?: unknown[];
}

/** Marshals `msg`; the fds its `h` values name travel beside the bytes (SCM_RIGHTS). */
export function encodeMessage(msg: BusMessage): { data: Buffer; fds: number[] } {
  // marshallMessage rewrites the body into the marshaller's form: give it a copy.
  const [data, fds] = marshallMessage({ ...msg, body: msg.body ?? [] });
  return { data, fds };
}

const HEADER_BYTES = 16;
const MAX_MESSAGE_BYTES = 128 * 1024 * 1024; // the specification's limit

/** Bytes of the whole message starting at `buf` (16-byte header, padded fields, body), once the header is in. */
function messageLength(buf: Buffer): number | undefined {
  if (buf.length < HEADER_BYTES) return undefined;
  const le = buf[0] === 0x6c; // 'l'
  if (!le && buf[0] !== 0x42) throw new DBusProtocolError("bad endianness byte", { byte: buf[0] });
  const body = le ? buf.readUInt32LE(4) : buf.readUInt32BE(4);
  const fields = le ? buf.readUInt32LE(12) : buf.readUInt32BE(12);
  const total = HEADER_BYTES + Math.ceil(fields / 8) * 8 + body;
  if (total > MAX_MESSAGE_BYTES) throw new DBusProtocolError("message too long", { bytes: total });
  return total;
}

/** Splits a byte stream into messages. */
export class MessageReader {
  private pending: Buffer = Buffer.alloc(0);

  /** Adds bytes; returns every message now complete, in order. */
  push(chunk: Buffer): BusMessage[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: BusMessage[] = [];
    for (
      let len = messageLength(this.pending);
      len !== undefined && this.pending.length >= len;
      len = messageLength(this.pending)
    ) {
      out.push(decodeMessage(this.pending.subarray(0, len)));
      this.pending = this.pending.subarray(len);
    }
    return out;
  }
}

// Header field codes (the specification's), by BusMessage's names for them.
const headerFields = [
  undefined,
  "path",
  "interface",
  "member",
  "errorName",
  "replySerial",
  "destination",
  "sender",
  "signature",
  "unixFd",
] as const;

function decodeMessage(buf: Buffer): BusMessage {
  try {
    const reader = new DBusBuffer(buf, 0, buf[0]!, null, {});
    // The header's signature fixes these types: yyyyuua(yv), each field a (code, (signature, [value])).
    const [, type, flags, , , serial, fields] = reader.read("yyyyuua(yv)") as [
      number,
      number,
      number,
      number,
      number,
      number,
      [number, [unknown, [unknown]]][],
    ];
    const msg: Record<string, unknown> = { type, flags, serial };
    for (const [code, [, [value]]] of fields) {
      const name = headerFields[code];
      if (name) msg[name] = value;
    }
    reader.align(3);
    msg.body = reader.read(typeof msg.signature === "string" ? msg.signature : "");
    // The fields were read by their types above; messageToJsFmt turns the body's into dbus-next's JS form.
    return messageToJsFmt(msg) as unknown as BusMessage;
  } catch (err) {
    throw new DBusProtocolError("unparsable message", { bytes: buf.length }, { cause: err });
  }
}

/**
 * The bus's side of the SASL exchange. Any EXTERNAL identity is accepted: only root can reach the
 * socket (its mode is 0600), which is the authentication. Fd passing is agreed to when asked.
 */
export class SaslServer {
  private readonly guid = randomBytes(16).toString("hex");
  private text = "";
  private first = true;
  /** AUTH EXTERNAL came without its identity: the next DATA line carries it. */
  private awaitingData = false;

  /**
   * Feeds bytes; returns the replies to send and, after BEGIN, the bytes that followed it
   * (the first messages), else undefined while the exchange goes on.
   */
  push(chunk: Buffer): { replies: string[]; rest: Buffer | undefined } {
    let bytes = chunk;
    if (this.first && bytes.length > 0) {
      if (bytes[0] !== 0) throw new DBusProtocolError("the client did not open with a NUL byte");
      bytes = bytes.subarray(1);
      this.first = false;
    }
    this.text += bytes.toString("latin1");
    const replies: string[] = [];
    for (let end = this.text.indexOf("\r\n"); end >= 0; end = this.text.indexOf("\r\n")) {
      const line = this.text.slice(0, end);
      this.text = this.text.slice(end + 2);
      if (line === "BEGIN") return { replies, rest: Buffer.from(this.text, "latin1") };
      replies.push(this.answer(line));
    }
    if (this.text.length > 16 * 1024) throw new DBusProtocolError("SASL line too long");
    return { replies, rest: undefined };
  }

  private answer(line: string): string {
    const [command, mechanism, identity] = line.split(" ");
    const awaitingData = this.awaitingData;
    this.awaitingData = false;
    if (command === "AUTH" && mechanism === "EXTERNAL") {
      this.awaitingData = identity === undefined;
      return this.awaitingData ? "DATA\r\n" : `OK ${this.guid}\r\n`;
    }
    if (command === "DATA" && awaitingData) return `OK ${this.guid}\r\n`;
    if (command === "AUTH" || command === "CANCEL" || command === "DATA") return "REJECTED EXTERNAL\r\n";
    if (command === "NEGOTIATE_UNIX_FD") return "AGREE_UNIX_FD\r\n";
    return `ERROR "unknown command"\r\n`;
  }
}
