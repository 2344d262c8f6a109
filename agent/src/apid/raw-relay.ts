// Relays one gRPC call as HTTP/2 frames, without decoding a message: the caller's DATA
// frames go to a backend session, the backend's headers, DATA and trailers come back as
// they are. Through grpc-js's server and client instead, a Version call through apid
// cost twice the agent CPU of machined's own handling (bench/rpc-latency; docs/decisions/0002-apid-relays-without-decoding.md).

import http2, {
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { boundedStatusMessage } from "../grpc/status.js";
import type { BackendSession } from "./backend-session.js";

const log = logger("apid");
const {
  NGHTTP2_CANCEL,
  NGHTTP2_FLAG_END_STREAM,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_ENHANCE_YOUR_CALM,
  NGHTTP2_INADEQUATE_SECURITY,
} = http2.constants;

/** Answers a call with a status and no message (gRPC's trailers-only response), as grpc-js's server words it. */
export function replyStatus(stream: ServerHttp2Stream, code: grpc.status, details: string): void {
  if (stream.closed || stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-status": String(code),
      "grpc-message": encodeURI(boundedStatusMessage(details)),
    },
    { endStream: true },
  );
}

/** The status grpc-js's client reports for a stream the backend reset before answering. */
export function statusOfReset(rstCode: number | undefined): grpc.status {
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return grpc.status.UNAVAILABLE;
    case NGHTTP2_CANCEL:
      return grpc.status.CANCELLED;
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return grpc.status.RESOURCE_EXHAUSTED;
    case NGHTTP2_INADEQUATE_SECURITY:
      return grpc.status.PERMISSION_DENIED;
    default:
      return grpc.status.INTERNAL;
  }
}

/** Why a call could not be opened on a backend's session (UNAVAILABLE's details). */
export function unreachableDetails(backend: BackendSession, err: unknown): string {
  return `${backend.name} unreachable: ${describeError(err)}`;
}

/** Why a backend's stream ended before it answered: its error, else its reset code. */
export function closedDetails(backendName: string, err: Error | undefined, rstCode: number | undefined): string {
  return `${backendName}: ${err ? describeError(err) : `stream closed (code ${rstCode ?? 0})`}`;
}

/** Response headers or trailers as the backend sent them, without HTTP/2's own pseudo-headers (but :status). */
function passedOn(h: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const k of Object.keys(h)) {
    if (k.startsWith(":") && k !== ":status") continue;
    out[k] = h[k];
  }
  return out;
}

/**
 * Relays `front` (the caller's stream) to `backend` with `headers` as the request's.
 * A backend unreachable or resetting before it answered becomes a status like the one grpc-js's
 * client would have reported; a caller that goes away cancels the backend's stream.
 */
export function relayCall(front: ServerHttp2Stream, headers: OutgoingHttpHeaders, backend: BackendSession): void {
  const backendName = backend.name;
  let up: ClientHttp2Stream;
  try {
    up = backend.request(headers);
  } catch (err) {
    replyStatus(front, grpc.status.UNAVAILABLE, unreachableDetails(backend, err));
    return;
  }
  let trailers: OutgoingHttpHeaders | undefined;
  let upError: Error | undefined;
  front.pipe(up);
  up.on("response", (h, flags) => {
    if (front.closed || front.destroyed) return;
    if (flags & NGHTTP2_FLAG_END_STREAM) {
      front.respond(passedOn(h), { endStream: true });
      return;
    }
    front.respond(passedOn(h), { waitForTrailers: true });
    up.pipe(front);
  });
  up.on("trailers", (t) => {
    trailers = passedOn(t);
  });
  front.on("wantTrailers", () => {
    front.sendTrailers(
      trailers ?? {
        "grpc-status": String(grpc.status.INTERNAL),
        "grpc-message": encodeURI(`${backendName} ended the call without a status`),
      },
    );
  });
  up.on("error", (err) => {
    upError = err;
  });
  front.on("error", (err) => log.debug("caller's stream failed", { error: describeError(err) }));
  up.on("close", () => {
    if (front.closed || front.destroyed) return;
    if (!front.headersSent) {
      // Unreachable before any answer (machined may be restarting): UNAVAILABLE, which callers retry; a reset is the backend's word.
      const reset =
        (upError === undefined || ("code" in upError && upError.code === "ERR_HTTP2_STREAM_ERROR")) && !!up.rstCode;
      const code = reset ? statusOfReset(up.rstCode) : grpc.status.UNAVAILABLE;
      replyStatus(front, code, closedDetails(backendName, upError, up.rstCode));
    } else if (trailers === undefined) {
      front.close(up.rstCode || http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
  });
  front.on("close", () => {
    if (!up.closed && !up.destroyed) up.close(NGHTTP2_CANCEL);
  });
}

/** grpc-timeout's value in milliseconds ("<digits><unit>"); undefined when absent or malformed. */
export function timeoutMs(value: OutgoingHttpHeaders[string]): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(String(value ?? ""));
  if (!m) return undefined;
  const perUnit: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };
  return Number(m[1]) * perUnit[m[2]!]!;
}

/** The first message of a gRPC body (length-prefixed, uncompressed); undefined when there is none. */
export function firstMessage(body: Buffer): Buffer | undefined {
  if (body.length < 5 || body[0] !== 0) return undefined;
  const length = body.readUInt32BE(1);
  return body.length >= 5 + length ? body.subarray(5, 5 + length) : undefined;
}

/** A request or reply body that is too large to hold (grpc-js's limit on a message). */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request larger than ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** The caller's request body, read whole (a unary call's one message, framed); rejects past `limit` bytes or when the caller goes. */
export function readRequest(front: ServerHttp2Stream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    front.on("data", (b: Buffer) => {
      size += b.length;
      if (size > limit) {
        front.removeAllListeners("data");
        front.pause();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(b);
    });
    front.once("end", () => resolve(Buffer.concat(chunks)));
    front.once("close", () => reject(new Error("the caller went away")));
  });
}

/** Answers a unary call with `message` and status OK (uncompressed). */
export function answerUnary(front: ServerHttp2Stream, message: Buffer): void {
  if (front.closed || front.destroyed || front.headersSent) return;
  const body = Buffer.alloc(5 + message.length);
  body.writeUInt32BE(message.length, 1);
  message.copy(body, 5);
  front.respond(
    {
      ":status": 200,
      "content-type": "application/grpc+proto",
      "grpc-accept-encoding": "identity,deflate,gzip",
      "grpc-encoding": "identity",
    },
    { waitForTrailers: true },
  );
  front.once("wantTrailers", () => front.sendTrailers({ "grpc-status": String(grpc.status.OK), "grpc-message": "OK" }));
  front.end(body);
}
