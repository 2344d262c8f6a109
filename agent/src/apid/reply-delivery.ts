// apid's half of the reply-delivery handshake (grpc/reply-delivery.ts): a server interceptor
// gives each tracked call a token in the metadata passed on to machined, and reports it back
// once the reply has left: the call's HTTP/2 stream has closed (its last frame handed to the
// connection, or the call ended otherwise) and the caller's TCP stack has acknowledged every
// byte of the connection, so no part of the reply still waits on an address that may go.

import { randomUUID } from "node:crypto";
import type { ServerHttp2Stream } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { replyDeliveredPath, replyDeliveryKey, replyTrackedPaths } from "../grpc/reply-delivery.js";
import { type TcpConnection, tcpUnackedBytes } from "../sys/tcp-unacked.js";

const log = logger("apid");
const identity = (b: Buffer): Buffer => b;

/** How long apid waits for the caller's acknowledgement (below machined's own bound). */
const ackWaitMs = 8_000;
const ackPollMs = 10;

/** The TCP connection a stream travels on; undefined on a unix socket. */
function connectionOf(stream: ServerHttp2Stream): TcpConnection | undefined {
  const s = stream.session?.socket;
  if (!s?.localAddress || !s.remoteAddress || s.localPort === undefined || s.remotePort === undefined) return undefined;
  return {
    localAddress: s.localAddress,
    localPort: s.localPort,
    remoteAddress: s.remoteAddress,
    remotePort: s.remotePort,
  };
}

/** Resolves once the caller acknowledged all the connection carried (or it is gone, or the wait's bound passed). */
async function acknowledged(conn: TcpConnection): Promise<void> {
  const end = Date.now() + ackWaitMs;
  while (Date.now() < end) {
    const unacked = await tcpUnackedBytes(conn);
    if (!unacked) return;
    await new Promise((r) => setTimeout(r, ackPollMs));
  }
  log.warn("the caller did not acknowledge a reply in time: reporting it anyway", {
    remote: `${conn.remoteAddress}:${conn.remotePort}`,
  });
}

/**
 * Reports a delivered token to machined on a channel of its own: the reply may be acknowledged
 * after this apid stopped (leaving maintenance restarts it). A failure only costs machined its bounded wait.
 */
export function reportDelivery(machinedTarget: string, token: string): void {
  const machined = new grpc.Client(machinedTarget, grpc.credentials.createInsecure());
  machined.makeUnaryRequest(
    replyDeliveredPath,
    identity,
    identity,
    Buffer.from(token),
    new grpc.Metadata(),
    { deadline: Date.now() + 10_000 },
    (err) => {
      machined.close();
      if (err) log.warn("reporting a reply's delivery to machined failed", { error: describeError(err) });
    },
  );
}

/** Reports `token` to machined once `stream` has closed and the caller acknowledged what its connection carried. */
export function reportWhenDelivered(stream: ServerHttp2Stream, machinedTarget: string, token: string): void {
  const conn = connectionOf(stream);
  stream.once(
    "close",
    () => void (conn ? acknowledged(conn) : Promise.resolve()).then(() => reportDelivery(machinedTarget, token)),
  );
}

/** The interceptor, outermost in apid's socket server; `machinedTarget` is machined's socket (unix:...). */
export function replyDeliveryInterceptor(machinedTarget: string): grpc.ServerInterceptor {
  return (method, call) => {
    if (!replyTrackedPaths.has(method.path)) return new grpc.ServerInterceptingCall(call);
    const token = randomUUID();
    // grpc-js keeps the HTTP/2 stream private; as the first interceptor we are handed its base call, which holds it.
    const stream = (call as unknown as { stream?: ServerHttp2Stream }).stream;
    if (stream) reportWhenDelivered(stream, machinedTarget, token);
    else
      log.error("no HTTP/2 stream on the call: machined will wait its bound for this reply", { method: method.path });
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        metadata.set(replyDeliveryKey, token);
        next(metadata);
      })
      .build();
    const responder = new grpc.ResponderBuilder().withStart((next) => next(listener)).build();
    return new grpc.ServerInterceptingCall(call, responder);
  };
}
