// apid's half of the reply-delivery handshake (grpc/reply-delivery.ts): a server interceptor
// gives each tracked call a token in the metadata passed on to machined, and reports it back
// once the call's HTTP/2 stream has closed, that is once the reply's last frame was handed to
// the caller's connection (or the call ended otherwise: machined must not wait for it then).

import { randomUUID } from "node:crypto";
import type { ServerHttp2Stream } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { replyDeliveredPath, replyDeliveryKey, replyTrackedPaths } from "../grpc/reply-delivery.js";

const log = logger("apid");
const identity = (b: Buffer): Buffer => b;

/** Reports a delivered token to machined; a failure only costs machined its bounded wait. */
export function reportDelivery(machined: grpc.Client, token: string): void {
  machined.makeUnaryRequest(replyDeliveredPath, identity, identity, Buffer.from(token), new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err) => {
    if (err) log.warn("reporting a reply's delivery to machined failed", { error: describeError(err) });
  });
}

/** The interceptor, outermost in apid's server: `machined` is the local backend's client at report time. */
export function replyDeliveryInterceptor(machined: () => grpc.Client): grpc.ServerInterceptor {
  return (method, call) => {
    if (!replyTrackedPaths.has(method.path)) return new grpc.ServerInterceptingCall(call);
    const token = randomUUID();
    // grpc-js keeps the HTTP/2 stream private; as the first interceptor we are handed its base call, which holds it.
    const stream = (call as unknown as { stream?: ServerHttp2Stream }).stream;
    if (stream) stream.once("close", () => reportDelivery(machined(), token));
    else log.error("no HTTP/2 stream on the call: machined will wait its bound for this reply", { method: method.path });
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
