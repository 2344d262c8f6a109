// The host DNS cache: answers queries from the cache, else forwards them to the
// upstream resolvers in order (the first that answers wins) over the transport the
// query came in on, keeps what may be cached, and answers SERVFAIL when no upstream
// does. Listeners serve it on UDP and TCP at an address:port.

import dgram from "node:dgram";
import net from "node:net";
import { describeError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { DnsCache } from "./cache.js";
import { exchange, frame, upstreamAddress, type DnsTransport } from "./forward.js";
import { DnsMessageError, messageId, readQuestion, servfail } from "./message.js";

const log = logger("host-dns");

export class DnsListenError extends SystemError {}

export interface HostDnsResolverOptions {
  cache?: DnsCache;
  /** Per upstream and query; default 2 s. */
  upstreamTimeoutMs?: number;
}

export class HostDnsResolver {
  readonly cache: DnsCache;
  private upstreams: string[] = [];
  private readonly timeoutMs: number;

  constructor(opts: HostDnsResolverOptions = {}) {
    this.cache = opts.cache ?? new DnsCache();
    this.timeoutMs = opts.upstreamTimeoutMs ?? 2000;
  }

  /** Returns whether the list changed. */
  setUpstreams(upstreams: readonly string[]): boolean {
    if (upstreams.length === this.upstreams.length && upstreams.every((u, i) => u === this.upstreams[i])) return false;
    for (const u of upstreams) upstreamAddress(u);
    this.upstreams = [...upstreams];
    return true;
  }

  /** The reply to one query (undefined: not a query worth an answer). */
  async resolve(query: Buffer, transport: DnsTransport): Promise<Buffer | undefined> {
    let question;
    try {
      question = readQuestion(query);
    } catch (err) {
      if (err instanceof DnsMessageError && query.length >= 12) return servfail(query);
      return undefined;
    }
    const cached = this.cache.get(question, messageId(query));
    if (cached) return cached;
    for (const upstream of this.upstreams) {
      try {
        const reply = await exchange(query, upstream, transport, this.timeoutMs);
        this.cache.put(question, reply);
        return reply;
      } catch (err) {
        log.debug("upstream failed", { upstream, name: question.name, error: describeError(err) });
      }
    }
    return servfail(query);
  }
}

export interface DnsListener {
  readonly transport: DnsTransport;
  readonly address: string;
  close(): Promise<void>;
}

/** "127.0.0.53:53" -> host, port. */
function split(address: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m || net.isIP(m[1]!) === 0)
    throw new DnsListenError(`not an IP:port listen address: ${JSON.stringify(address)}`, { address });
  return { host: m[1]!, port: Number(m[2]) };
}

export function listenUdp(address: string, resolver: HostDnsResolver): Promise<DnsListener> {
  const { host, port } = split(address);
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(host) ? "udp6" : "udp4");
    socket.once("error", (err) =>
      reject(new DnsListenError(`cannot listen on udp ${address}`, { address }, { cause: err })),
    );
    socket.bind(port, host, () => {
      socket.removeAllListeners("error");
      socket.on("error", (err) => log.warn("DNS UDP socket error", { address, error: describeError(err) }));
      socket.on("message", (msg, rinfo) => {
        // The answer may come after the listener closed (a slow upstream): send throws then, caught here.
        resolver
          .resolve(msg, "udp")
          .then((reply) => reply && socket.send(reply, rinfo.port, rinfo.address))
          .catch((err: unknown) => log.warn("DNS query failed", { address, error: describeError(err) }));
      });
      resolve({ transport: "udp", address, close: () => new Promise((done) => socket.close(() => done())) });
    });
  });
}

const TCP_IDLE_MS = 10_000;

export function listenTcp(address: string, resolver: HostDnsResolver): Promise<DnsListener> {
  const { host, port } = split(address);
  const connections = new Set<net.Socket>();
  const server = net.createServer((conn) => {
    connections.add(conn);
    conn.setTimeout(TCP_IDLE_MS, () => conn.destroy());
    conn.on("close", () => connections.delete(conn));
    conn.on("error", () => conn.destroy());
    let buf = Buffer.alloc(0);
    conn.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      // Several queries may come on one connection; each answer goes back as it is ready.
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const query = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + query.length);
        resolver
          .resolve(Buffer.from(query), "tcp")
          .then((reply) => reply && !conn.destroyed && conn.write(frame(reply)))
          .catch((err: unknown) => log.warn("DNS query failed", { address, error: describeError(err) }));
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", (err) =>
      reject(new DnsListenError(`cannot listen on tcp ${address}`, { address }, { cause: err })),
    );
    server.listen(port, host, () => {
      server.removeAllListeners("error");
      server.on("error", (err) => log.warn("DNS TCP listener error", { address, error: describeError(err) }));
      resolve({
        transport: "tcp",
        address,
        close: () =>
          new Promise((done) => {
            for (const c of connections) c.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
