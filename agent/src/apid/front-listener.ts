// apid's API listener (:50000): TLS and HTTP/2 from node:http2. Every call is authenticated
// here (the client certificate read once per connection). A unary call for this node alone is
// relayed as frames straight to machined's socket (raw-relay.ts); a unary call naming nodes is
// routed here too: its request read once, sent to machined for this node and to the other nodes'
// apid, the replies merged and tagged as Talos's proxy does. Streams, paths the API does not have and
// compressed requests that would need decoding go, as frames too, to apid's grpc-js proxy (proxy-server.ts),
// with the roles decided here.

import { randomUUID } from "node:crypto";
import http2, {
  type Http2SecureServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { PeerCertificate, TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { splitHostPort } from "../sys/host-port.js";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { MAX_MESSAGE_BYTES } from "../grpc/limits.js";
import { headerMetadata, logCall } from "../grpc/call-log.js";
import { replyDeliveryKey, replyTrackedPaths } from "../grpc/reply-delivery.js";
import { authenticatePeer, tlsOptions, type ListenerMode } from "./credentials.js";
import { callHeaders, CallStatusError, unaryFrameCall } from "./frame-stream.js";
import { asStatus, forwardedMetadata, mergedReplies, route, type Caller, type Leg, type Route } from "./director.js";
import { type ProxiedMethod } from "./proxy-server.js";
import { BackendSession } from "./backend-session.js";
import {
  answerUnary,
  BodyTooLargeError,
  firstMessage,
  readRequest,
  relayCall,
  replyStatus,
  timeoutMs,
} from "./raw-relay.js";
import { reportWhenDelivered } from "./reply-delivery.js";

const log = logger("apid");

export interface FrontOptions {
  listen: string; // host:port
  mode: ListenerMode;
  methods: readonly ProxiedMethod[];
  /** machined's socket session: unary calls for this node. */
  machined: BackendSession;
  /** apid's grpc-js proxy: streams, unknown paths, compressed requests for other nodes. */
  proxy: BackendSession;
  /** The session to another node's apid (undefined when this apid cannot forward). */
  remote(target: string): BackendSession | undefined;
  /** machined's socket (unix:...), where an apply's delivered reply is reported. */
  machinedTarget: string;
  /** Whether a `nodes` target means this node. */
  isSelf(target: string): boolean;
  /** Whether this apid holds a client certificate to forward with (a fan-out's reply is then tagged). */
  canForward(): boolean;
  /** Nodes of one fan-out called at the same time. Default 16, as the proxy's. */
  maxConcurrentTargets?: number;
}

/** Where one leg of a call goes: machined's socket, or another node's apid. */
type Destination = "machined" | BackendSession;

// Never passed on as the caller sent them: the roles and listener tag are ours to set, the token is apid's.
const ownKeys = [roleKey, listenerKey, replyDeliveryKey];
// What the proxy consumes for routing; a call relayed to machined has no routing left to do.
const routingKeys = ["node", "nodes", "proxyfrom"];

/** Header values as grpc-js reads metadata: repeated values and comma-joined ones alike. */
function headerValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The headers of the call as passed on: the caller's, without `drop`, with the caller's roles (and maintenance tag). */
function forwardedHeaders(
  headers: IncomingHttpHeaders,
  drop: readonly string[],
  caller: Caller | undefined,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {
    ":method": "POST",
    ":scheme": "http",
    ":authority": headers[":authority"] ?? "localhost",
    ":path": headers[":path"],
  };
  for (const k of Object.keys(headers)) {
    if (k.startsWith(":") || drop.includes(k)) continue;
    out[k] = headers[k];
  }
  if (caller) {
    out[roleKey] = caller.roles.join(",");
    if (caller.maintenance) out[listenerKey] = "maintenance";
  }
  return out;
}

/** The TLS listener; `update` swaps renewed certificates of the same kind in place. */
export class ApiFront {
  private readonly server: Http2SecureServer;
  private readonly sessions = new Set<Http2Session>();
  private readonly peers = new WeakMap<Http2Session, PeerCertificate | undefined>();
  private readonly unary: ReadonlySet<string>;
  private readonly known: ReadonlySet<string>;
  private mode: ListenerMode;

  constructor(private readonly opts: FrontOptions) {
    this.mode = opts.mode;
    this.unary = new Set(opts.methods.filter((m) => !m.requestStream && !m.responseStream).map((m) => m.path));
    this.known = new Set(opts.methods.map((m) => m.path));
    // As grpc-js's server: no cap on header blocks or session memory (large replies), no idle timeout.
    this.server = http2.createSecureServer({
      ...tlsOptions(opts.mode),
      maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
    });
    this.server.setTimeout(0);
    this.server.on("secureConnection", (socket: TLSSocket) =>
      socket.on("error", (err) => log.debug("connection failed", { error: describeError(err) })),
    );
    this.server.on("session", (s: Http2Session) => {
      this.sessions.add(s);
      s.on("close", () => this.sessions.delete(s));
      s.on("error", (err) => log.debug("session failed", { error: describeError(err) }));
    });
    this.server.on("stream", (stream, headers) => this.serve(stream, headers));
  }

  /** Listens on opts.listen; rejects (listening nowhere) when the address cannot be bound. */
  async listen(): Promise<void> {
    const { host, port } = splitHostPort(this.opts.listen);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once("error", onError);
      this.server.listen(port, host, () => {
        this.server.removeListener("error", onError);
        resolve();
      });
    });
  }

  /** The port bound (for listeners on port 0). */
  port(): number {
    const a = this.server.address();
    return typeof a === "object" && a ? a.port : 0;
  }

  update(mode: ListenerMode): void {
    this.mode = mode;
    this.server.setSecureContext(tlsOptions(mode));
  }

  /** Stops listening; calls in flight get `graceMs` to finish (an apply's reply among them). */
  async close(graceMs = 2000): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sessions) s.close();
    const timer = setTimeout(() => {
      for (const s of this.sessions) s.destroy();
    }, graceMs);
    await closed;
    clearTimeout(timer);
  }

  private peerOf(session: Http2Session | undefined): PeerCertificate | undefined {
    if (!session) return undefined;
    if (this.peers.has(session)) return this.peers.get(session);
    // http2 hands out a proxy of the socket; the TLS methods are reachable through it.
    const socket = session.socket as TLSSocket;
    const cert = socket.getPeerCertificate?.();
    const peer = cert?.raw ? cert : undefined;
    this.peers.set(session, peer);
    return peer;
  }

  private serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    const path = headers[":path"] ?? "";
    logWhenClosed(stream, headers, path);
    const grpcCall =
      headers[":method"] === "POST" && String(headers["content-type"] ?? "").startsWith("application/grpc");
    if (!grpcCall || !this.known.has(path)) {
      // grpc-js answers these as it always has (UNIMPLEMENTED, 415, ...); no roles go with them.
      relayCall(stream, forwardedHeaders(headers, ownKeys, undefined), this.opts.proxy);
      return;
    }
    let caller: Caller;
    try {
      caller = authenticatePeer(this.mode, this.peerOf(stream.session), headerValues(headers[roleKey]), path);
    } catch (err) {
      const e = err as Partial<grpc.ServiceError>; // authenticatePeer throws grpc-shaped errors only
      replyStatus(stream, e.code ?? grpc.status.UNAUTHENTICATED, e.details ?? describeError(err));
      return;
    }
    const token = replyTrackedPaths.has(path) ? randomUUID() : undefined;
    if (token) reportWhenDelivered(stream, this.opts.machinedTarget, token);
    const withToken = (out: OutgoingHttpHeaders) => (token ? { ...out, [replyDeliveryKey]: token } : out);
    const toProxy = () => relayCall(stream, withToken(forwardedHeaders(headers, ownKeys, caller)), this.opts.proxy);
    if (!this.unary.has(path)) return toProxy();
    const canForward = this.opts.canForward();
    const r = route<Destination>(path, (k) => headerValues(headers[k]), {
      local: "machined",
      remote: (t) => this.opts.remote(t),
      canForward,
      isSelf: (t) => this.opts.isSelf(t),
    });
    if (r.kind === "error") return replyStatus(stream, r.error.code, r.error.details);
    if (r.kind === "one" && !r.leg.remote) {
      relayCall(stream, withToken(forwardedHeaders(headers, [...ownKeys, ...routingKeys], caller)), this.opts.machined);
      return;
    }
    // A compressed request would have to be decoded to be sent on as one message: the proxy does that.
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return toProxy();
    this.forward(stream, headers, caller, r, withToken).catch((err: unknown) => {
      log.warn("forwarding a call failed", { path, error: describeError(err) });
      replyStatus(stream, grpc.status.INTERNAL, describeError(err));
    });
  }

  /** A unary call for other nodes (or several): the request read once, each leg called, the replies merged. */
  private async forward(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    caller: Caller,
    r: Route<Destination> & { kind: "one" | "many" },
    withToken: (o: OutgoingHttpHeaders) => OutgoingHttpHeaders,
  ): Promise<void> {
    let body: Buffer;
    try {
      body = await readRequest(stream, MAX_MESSAGE_BYTES + 5);
    } catch (err) {
      if (err instanceof BodyTooLargeError)
        replyStatus(
          stream,
          grpc.status.RESOURCE_EXHAUSTED,
          `Received message larger than max (limit ${MAX_MESSAGE_BYTES} bytes)`,
        );
      return; // otherwise the caller went away
    }
    const message = firstMessage(body);
    if (!message)
      return replyStatus(stream, grpc.status.INTERNAL, "the request holds no complete uncompressed message");
    const path = headers[":path"]!;
    // Every leg gets the caller's deadline and no other, as Talos's director passes the caller's context on.
    const legMs = timeoutMs(headers["grpc-timeout"]);
    const cancels = new Set<() => void>();
    stream.once("close", () => cancels.forEach((c) => c()));
    // machined gets the caller's headers as they came (less routing); another node's apid, the proxy's metadata.
    const localHeaders = withToken(forwardedHeaders(headers, [...ownKeys, ...routingKeys], caller));
    const callerMetadata = grpc.Metadata.fromHttp2Headers(headers);
    for (const k of ownKeys) callerMetadata.remove(k);
    const send = (leg: Leg<Destination>): Promise<Buffer> => {
      if (stream.closed)
        return Promise.reject(new CallStatusError({ code: grpc.status.CANCELLED, details: "the caller went away" }));
      const deadline = legMs === undefined ? Infinity : Date.now() + legMs;
      if (leg.client === "machined")
        return unaryFrameCall(this.opts.machined, localHeaders, message, deadline, cancels);
      const md = forwardedMetadata(callerMetadata, caller, true, headers[":authority"]);
      return unaryFrameCall(leg.client, callHeaders(path, md), message, deadline, cancels);
    };
    const reply = r.kind === "one" ? send(r.leg) : mergedReplies(r.legs, send, this.opts.maxConcurrentTargets ?? 16);
    await reply.then(
      (m) => answerUnary(stream, m),
      (err: unknown) => {
        const st = asStatus(err);
        replyStatus(stream, st.code, st.details);
      },
    );
  }
}

/**
 * Logs the call once its stream closes, with the status it was answered with (the trailers', or the headers' of a
 * trailers-only answer; none: the caller went away). Talos's apid serves every call through its proxy's stream
 * handler, so it logs each as a stream.
 */
function logWhenClosed(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, path: string): void {
  const started = process.hrtime.bigint();
  stream.once("close", () => {
    const sent = stream.sentTrailers?.["grpc-status"] !== undefined ? stream.sentTrailers : stream.sentHeaders;
    const status = sent?.["grpc-status"];
    const code = status === undefined ? grpc.status.CANCELLED : Number(status);
    const details = status === undefined ? "context canceled" : decodeGrpcMessage(String(sent?.["grpc-message"] ?? ""));
    logCall(log, {
      path,
      streaming: true,
      code,
      details,
      durationNs: Number(process.hrtime.bigint() - started),
      metadata: headerMetadata(headers),
    });
  });
}

function decodeGrpcMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
