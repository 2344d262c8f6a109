// One DNS exchange with an upstream resolver, over UDP (a fresh socket, so a fresh
// source port, per query) or TCP (RFC 1035 §4.2.2: two-byte length prefix).

import dgram from "node:dgram";
import net from "node:net";
import { SystemError } from "../../errors.js";
import { isResponse, messageId } from "./message.js";

export class DnsUpstreamError extends SystemError {}

export type DnsTransport = "udp" | "tcp";

export const DNS_PORT = 53;

/** "1.1.1.1", "1.1.1.1:5353", "[2001:db8::1]:53" -> host and port. */
export function upstreamAddress(upstream: string): { host: string; port: number } {
  if (net.isIP(upstream) !== 0) return { host: upstream, port: DNS_PORT };
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(upstream);
  if (!m) throw new DnsUpstreamError(`not an upstream address: ${JSON.stringify(upstream)}`, { upstream });
  return { host: m[1]!, port: Number(m[2]) };
}

export function exchange(query: Buffer, upstream: string, transport: DnsTransport, timeoutMs: number): Promise<Buffer> {
  const { host, port } = upstreamAddress(upstream);
  return transport === "udp" ? exchangeUdp(query, host, port, timeoutMs) : exchangeTcp(query, host, port, timeoutMs);
}

function exchangeUdp(query: Buffer, host: string, port: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(host) ? "udp6" : "udp4");
    const id = messageId(query);
    let settled = false;
    // Once only: a send callback may still come after the timeout closed the socket, and a second close throws.
    const finish = (err: unknown, reply?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => finish(new DnsUpstreamError(`no answer from ${host}:${port} (udp) in ${timeoutMs} ms`, { upstream: host })),
      timeoutMs,
    );
    socket.on("error", (err) =>
      finish(new DnsUpstreamError(`exchange with ${host}:${port} (udp) failed`, { upstream: host }, { cause: err })),
    );
    socket.on("message", (msg, rinfo) => {
      // Anything else (another source, another id) is not the answer and is dropped.
      if (rinfo.address !== host || msg.length < 12 || messageId(msg) !== id || !isResponse(msg)) return;
      finish(undefined, msg);
    });
    socket.send(query, port, host, (err) => {
      if (err)
        finish(new DnsUpstreamError(`query to ${host}:${port} (udp) not sent`, { upstream: host }, { cause: err }));
    });
  });
}

function exchangeTcp(query: Buffer, host: string, port: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let buf = Buffer.alloc(0);
    const finish = (err: unknown, reply?: Buffer) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => finish(new DnsUpstreamError(`no answer from ${host}:${port} (tcp) in ${timeoutMs} ms`, { upstream: host })),
      timeoutMs,
    );
    socket.on("error", (err) =>
      finish(new DnsUpstreamError(`exchange with ${host}:${port} (tcp) failed`, { upstream: host }, { cause: err })),
    );
    socket.on("connect", () => socket.write(frame(query)));
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
        finish(undefined, buf.subarray(2, 2 + buf.readUInt16BE(0)));
    });
    socket.on("end", () =>
      finish(new DnsUpstreamError(`${host}:${port} (tcp) closed without an answer`, { upstream: host })),
    );
  });
}

/** A message with its TCP length prefix. */
export function frame(message: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(message.length);
  return Buffer.concat([len, message]);
}
