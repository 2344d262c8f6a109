// Writing to a server stream from a handler: grpc-js buffers without bound unless
// the writer waits for "drain", and a client that goes away must end the wait,
// not leave it (and its listeners) behind.

import type * as grpc from "@grpc/grpc-js";

type ServerStream = Pick<grpc.ServerWritableStream<unknown, unknown>, "write" | "once" | "off" | "cancelled">;

/** Sends one message; resolves false once the client has gone, so the caller stops producing. */
export async function send(call: ServerStream, message: unknown): Promise<boolean> {
  if (call.cancelled) return false;
  if (call.write(message)) return true;
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => () => {
      call.off("drain", drained);
      call.off("cancelled", gone);
      call.off("close", gone);
      resolve(ok);
    };
    const drained = done(true);
    const gone = done(false);
    call.once("drain", drained);
    call.once("cancelled", gone);
    call.once("close", gone);
  });
}

/** An AbortSignal that fires when the client cancels; dispose() removes the listener when the handler ends. */
export function cancellation(call: Pick<ServerStream, "once" | "off" | "cancelled">): {
  signal: AbortSignal;
  dispose(): void;
} {
  const ac = new AbortController();
  const abort = () => ac.abort();
  if (call.cancelled) ac.abort();
  else call.once("cancelled", abort);
  return { signal: ac.signal, dispose: () => call.off("cancelled", abort) };
}
