// A backend's server stream read as HTTP/2 frames. grpc-js's client hands a message over only when
// its reader asks for one and, once an error status has come, drops those it still holds
// (grpc/grpc-node#2764): a reader held back by a slow caller always holds some. Read as frames, every
// message before the trailers is passed on, and HTTP/2's flow control holds the backend back meanwhile.

import http2, { type ClientHttp2Stream, type IncomingHttpHeaders } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import { whenStreamOver } from "../grpc/stream-outcome.js";
import type { BackendSession } from "./raw-relay.js";

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = http2.constants;

/** Messages of one backend stream, then its status: what apid's proxy relays to a caller. */
export interface MessageSource {
  onMessage(listener: (message: Buffer) => void): void;
  /** Called once, after the last message. */
  whenOver(listener: (status: grpc.StatusObject) => void): void;
  pause(): void;
  resume(): void;
  cancel(): void;
}

/** A grpc-js client stream as a MessageSource (other nodes' apid, whose channels carry TLS). */
export function grpcSource(up: grpc.ClientReadableStream<Buffer> | grpc.ClientDuplexStream<Buffer, Buffer>): MessageSource {
  return {
    onMessage: (listener) => void up.on("data", listener),
    whenOver: (listener) => whenStreamOver(up, listener),
    pause: () => void up.pause(),
    resume: () => void up.resume(),
    cancel: () => up.cancel(),
  };
}

/** grpc-timeout's value for a deadline (milliseconds, as grpc-js writes it); none for no deadline. */
function timeoutHeader(deadline: grpc.Deadline): string | undefined {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(at)) return undefined;
  return `${Math.max(0, Math.ceil(at - Date.now()))}m`;
}

/** The status in a trailers (or trailers-only) block; undefined when it holds none. */
function statusOf(h: IncomingHttpHeaders): grpc.StatusObject | undefined {
  const code = h["grpc-status"];
  if (code === undefined) return undefined;
  const raw = String(h["grpc-message"] ?? "");
  let details = raw;
  try {
    details = decodeURIComponent(raw);
  } catch {
    // A message that is not percent-encoding is passed on as it came.
  }
  const metadata = grpc.Metadata.fromHttp2Headers(h);
  for (const k of ["grpc-status", "grpc-message", "content-type"]) metadata.remove(k);
  return { code: Number(code), details, metadata };
}

/**
 * Calls `path` on the backend with one request message and reads its replies as frames. A message the
 * backend compressed is refused with INTERNAL: apid asks for none (no grpc-accept-encoding).
 */
export function openFrameStream(backend: BackendSession, backendName: string, path: string, metadata: grpc.Metadata, request: Buffer, deadline: grpc.Deadline): MessageSource {
  let messageListener: (message: Buffer) => void = () => {};
  let overListener: (status: grpc.StatusObject) => void = () => {};
  let status: grpc.StatusObject | undefined;
  let ended = false;
  let over = false;
  const finish = (st: grpc.StatusObject) => {
    if (over) return;
    over = true;
    overListener(st);
  };
  const failed = (code: grpc.status, details: string) => finish({ code, details, metadata: new grpc.Metadata() });

  const headers = { ...metadata.toHttp2Headers(), ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" };
  const timeout = timeoutHeader(deadline);
  let up: ClientHttp2Stream;
  try {
    up = backend.get().request(timeout ? { ...headers, "grpc-timeout": timeout } : headers);
  } catch (err) {
    queueMicrotask(() => failed(grpc.status.UNAVAILABLE, `${backendName} unreachable: ${describeError(err)}`));
    return { onMessage: (l) => void (messageListener = l), whenOver: (l) => void (overListener = l), pause() {}, resume() {}, cancel() {} };
  }
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(request.length, 1);
  up.end(Buffer.concat([prefix, request]));

  let pending: Buffer = Buffer.alloc(0);
  up.on("data", (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 5 && !over) {
      const length = pending.readUInt32BE(1);
      if (pending.length < 5 + length) break;
      if (pending[0] !== 0) {
        up.close(NGHTTP2_CANCEL);
        return failed(grpc.status.INTERNAL, `${backendName} sent a compressed message apid did not ask for`);
      }
      const message = pending.subarray(5, 5 + length);
      pending = pending.subarray(5 + length);
      messageListener(message);
    }
  });
  up.on("response", (h, flags) => {
    if (flags & NGHTTP2_FLAG_END_STREAM) status = statusOf(h);
  });
  up.on("trailers", (h) => {
    status = statusOf(h);
  });
  up.on("end", () => {
    ended = true;
    if (pending.length > 0) return failed(grpc.status.INTERNAL, `${backendName} ended the stream inside a message`);
    if (status) finish(status);
  });
  let upError: Error | undefined;
  up.on("error", (err) => {
    upError = err;
  });
  up.on("close", () => {
    if (over) return;
    if (ended && status) return finish(status);
    if (up.rstCode === NGHTTP2_CANCEL) return failed(grpc.status.CANCELLED, `${backendName} cancelled the stream`);
    failed(grpc.status.UNAVAILABLE, `${backendName}: ${upError ? describeError(upError) : `stream closed (code ${up.rstCode ?? 0}) without a status`}`);
  });

  return {
    onMessage: (l) => void (messageListener = l),
    whenOver: (l) => void (overListener = l),
    pause: () => void up.pause(),
    resume: () => void up.resume(),
    cancel: () => {
      if (!up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
    },
  };
}
