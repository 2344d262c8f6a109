// When a client-side stream of grpc-js is over. It reports the call's status as soon
// as the trailers arrive, while messages the reader has not taken yet (held back by
// pause(), or queued behind a slow consumer) are still buffered: a reader that acts on
// the status alone loses them. The stream is over once it has ended as well.

import * as grpc from "@grpc/grpc-js";

type ReceivingStream = grpc.ClientReadableStream<unknown> | grpc.ClientDuplexStream<unknown, unknown>;

/**
 * Calls `done` once, with the call's status, after every message has been emitted.
 * The stream's `error` event carries the same failure; it is handled here so it is
 * never thrown.
 */
export function whenStreamOver(stream: ReceivingStream, done: (status: grpc.StatusObject) => void): void {
  let ended = false;
  let status: grpc.StatusObject | undefined;
  const settle = () => {
    if (ended && status) done(status);
  };
  stream.on("error", () => {});
  stream.once("status", (st: grpc.StatusObject) => {
    status = st;
    settle();
  });
  stream.once("end", () => {
    ended = true;
    settle();
  });
}
