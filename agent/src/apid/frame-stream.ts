// A backend's call read as HTTP/2 frames (this node's machined, other nodes' apid). grpc-js's client hands
// a message over only when its reader asks for one and, once an error status has come, drops those it
// still holds (grpc/grpc-node#2764): a reader held back by a slow caller always holds some. Read as frames,
// every message before the trailers is passed on, and HTTP/2's flow control holds the backend back meanwhile.

import http2, { type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { MAX_MESSAGE_BYTES } from "../grpc/limits.js";
import { type BackendSession } from "./backend-session.js";
import { closedDetails, statusOfReset, unreachableDetails } from "./raw-relay.js";

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = http2.constants;
// setTimeout's longest delay; a later deadline is the backend's to keep.
const maxTimerMs = 2 ** 31 - 1;

/** Messages of one backend call, then its status: what apid's proxy relays to a caller. */
export interface MessageSource {
  onMessage(listener: (message: Buffer) => void): void;
  /** Called once, after the last message. */
  whenOver(listener: (status: grpc.StatusObject) => void): void;
  pause(): void;
  resume(): void;
  cancel(): void;
}

/** The request messages of one backend call, with the backend's flow control. */
export interface RequestSink {
  /** Sends one message; false when the backend wants no more until `onDrain`. */
  write(message: Buffer): boolean;
  onDrain(listener: () => void): void;
  end(): void;
}

export interface FrameCall {
  replies: MessageSource;
  requests: RequestSink;
}

/** grpc-timeout's value for a deadline (milliseconds, as grpc-js writes it); none for no deadline. */
function timeoutHeader(deadline: grpc.Deadline): string | undefined {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(at)) return undefined;
  return `${Math.ceil(timeoutMs(deadline))}m`;
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

/** The gRPC status for an HTTP status that came without one, as grpc-js's client maps it. */
function statusOfHttp(http: number): grpc.status {
  switch (http) {
    case 400:
      return grpc.status.INTERNAL;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return grpc.status.UNAVAILABLE;
    default:
      return grpc.status.UNKNOWN;
  }
}

/** One message with gRPC's length prefix (uncompressed). */
function framed(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** The request headers of a call on `path` carrying `metadata`, as grpc-js's client sends them. */
export function callHeaders(path: string, metadata: grpc.Metadata): OutgoingHttpHeaders {
  return {
    ...metadata.toHttp2Headers(),
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  };
}

/**
 * Opens a call on the backend with `headers` (`callHeaders`' or the caller's own, as apid's listener passes
 * them on) and reads its replies as frames; the request messages go through `requests`. A finite `deadline`
 * is sent as grpc-timeout and kept here too. A backend that cannot be reached, or resets the stream before
 * its status, ends the call with the status grpc-js's client would report (UNAVAILABLE when never reached).
 * A message the backend compressed is refused with INTERNAL: apid asks for none (no grpc-accept-encoding).
 */
export function openFrameCall(
  backend: BackendSession,
  headers: OutgoingHttpHeaders,
  deadline: grpc.Deadline,
): FrameCall {
  const backendName = backend.name;
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

  // The replies are read here, so they must come uncompressed.
  const sent: OutgoingHttpHeaders = { ...headers };
  delete sent["grpc-accept-encoding"];
  const timeout = timeoutHeader(deadline);
  const up = requestOn(backend, timeout ? { ...sent, "grpc-timeout": timeout } : sent, (err) =>
    queueMicrotask(() => failed(grpc.status.UNAVAILABLE, unreachableDetails(backend, err))),
  );
  if (up) {
    readReplies(up);
    // As grpc-js's client: the deadline holds even when the backend (or the way to it) went silent.
    if (timeout) {
      const timer = setTimeout(
        () => {
          if (!up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
          failed(grpc.status.DEADLINE_EXCEEDED, "Deadline exceeded");
        },
        Math.min(timeoutMs(deadline), maxTimerMs),
      );
      timer.unref();
      up.once("close", () => clearTimeout(timer));
    }
  }

  function readReplies(up: ClientHttp2Stream): void {
    let pending: Buffer = Buffer.alloc(0);
    up.on("data", (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 5 && !over) {
        const length = pending.readUInt32BE(1);
        if (pending[0] !== 0) {
          up.close(NGHTTP2_CANCEL);
          return failed(grpc.status.INTERNAL, `${backendName} sent a compressed message apid did not ask for`);
        }
        if (length > MAX_MESSAGE_BYTES) {
          up.close(NGHTTP2_CANCEL);
          return failed(
            grpc.status.RESOURCE_EXHAUSTED,
            `${backendName} sent a message larger than max (${length} vs. ${MAX_MESSAGE_BYTES})`,
          );
        }
        if (pending.length < 5 + length) break;
        const message = pending.subarray(5, 5 + length);
        pending = pending.subarray(5 + length);
        messageListener(message);
      }
    });
    up.on("response", (h, flags) => {
      const http = Number(h[":status"]);
      if (http !== 200 && h["grpc-status"] === undefined) {
        // Not a gRPC answer (a proxy's or another server's): the status grpc-js's client makes of it.
        up.close(NGHTTP2_CANCEL);
        return failed(statusOfHttp(http), `Received HTTP status code ${http}`);
      }
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
      // As relayCall: a reset is the backend's word; a connection that failed (or never was) is UNAVAILABLE, which callers retry.
      const reset =
        (upError === undefined || ("code" in upError && upError.code === "ERR_HTTP2_STREAM_ERROR")) && !!up.rstCode;
      failed(
        reset ? statusOfReset(up.rstCode) : grpc.status.UNAVAILABLE,
        closedDetails(backendName, upError, up.rstCode),
      );
    });
  }

  return {
    replies: {
      onMessage: (l) => void (messageListener = l),
      whenOver: (l) => void (overListener = l),
      pause: () => void up?.pause(),
      resume: () => void up?.resume(),
      cancel: () => {
        if (up && !up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
      },
    },
    requests: {
      // Without a stream the call is over already: what is written goes nowhere.
      write: (message) => (up?.writable ? up.write(framed(message)) : true),
      onDrain: (l) => void up?.once("drain", l),
      end: () => void (up?.writable ? up.end() : undefined),
    },
  };
}

/** A stream on `backend`; undefined (with `onError` told why) when the session cannot be opened. */
function requestOn(
  backend: BackendSession,
  headers: OutgoingHttpHeaders,
  onError: (err: unknown) => void,
): ClientHttp2Stream | undefined {
  try {
    return backend.request(headers);
  } catch (err) {
    onError(err);
    return undefined;
  }
}

/** Milliseconds left until `deadline` (a finite one). */
function timeoutMs(deadline: grpc.Deadline): number {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Math.max(0, at - Date.now());
}

/** A call opened with `headers` (see openFrameCall) whose one request message is sent: its replies. */
function callWithOneRequest(
  backend: BackendSession,
  headers: OutgoingHttpHeaders,
  request: Buffer,
  deadline: grpc.Deadline,
): MessageSource {
  const call = openFrameCall(backend, headers, deadline);
  call.requests.write(request);
  call.requests.end();
  return call.replies;
}

/** Calls a server-streaming `path` on the backend with one request message and reads its replies as frames. */
export function openFrameStream(
  backend: BackendSession,
  path: string,
  metadata: grpc.Metadata,
  request: Buffer,
  deadline: grpc.Deadline,
): MessageSource {
  return callWithOneRequest(backend, callHeaders(path, metadata), request, deadline);
}

/** A backend call that ended with a status other than OK (or OK without the one message a unary call answers). */
export class CallStatusError extends Error implements grpc.StatusObject {
  readonly code: grpc.status;
  readonly details: string;
  readonly metadata: grpc.Metadata;

  constructor(status: Pick<grpc.StatusObject, "code" | "details"> & { metadata?: grpc.Metadata }) {
    super(status.details);
    this.name = "CallStatusError";
    this.code = status.code;
    this.details = status.details;
    this.metadata = status.metadata ?? new grpc.Metadata();
  }
}

/** The one reply message of a call whose requests were sent, or its status as a CallStatusError; its cancel sits in `cancels` while it runs. */
export function oneReply(backend: BackendSession, replies: MessageSource, cancels?: Set<() => void>): Promise<Buffer> {
  const cancel = () => replies.cancel();
  cancels?.add(cancel);
  return new Promise<Buffer>((resolve, reject) => {
    let reply: Buffer | undefined;
    replies.onMessage((m) => void (reply ??= m));
    replies.whenOver((st) => {
      cancels?.delete(cancel);
      if (st.code !== grpc.status.OK) reject(new CallStatusError(st));
      else if (reply === undefined)
        reject(
          new CallStatusError({ code: grpc.status.INTERNAL, details: `${backend.name} answered without a message` }),
        );
      else resolve(reply);
    });
  });
}

/**
 * One unary call as frames: `message` sent with `headers` (see openFrameCall), the reply message read whole.
 * apid's listener and its proxy both make their unary legs with it.
 */
export function unaryFrameCall(
  backend: BackendSession,
  headers: OutgoingHttpHeaders,
  message: Buffer,
  deadline: grpc.Deadline,
  cancels?: Set<() => void>,
): Promise<Buffer> {
  return oneReply(backend, callWithOneRequest(backend, headers, message, deadline), cancels);
}
