// The one way a cloud platform reaches its metadata service: an HTTP request answered
// with a status and a body. Everything a platform reads goes through this interface
// (a test serves the protocol on 169.254.169.254 or fakes it outright).

import { describeError, SystemError } from "../../errors.js";
import { lowPortRequest } from "./low-port-http.js";

export interface MetadataReply {
  status: number;
  body: Buffer;
}

export interface MetadataRequest {
  method?: "GET" | "PUT" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** Sent from a privileged source port (below 1024), which the service takes as proof that root asks. */
  lowSourcePort?: boolean;
}

export interface MetadataHttp {
  request(url: string, req?: MetadataRequest): Promise<MetadataReply>;
}

/** The metadata service did not answer, or answered that it cannot now (5xx, 429): retrying may help. */
export class MetadataUnreachableError extends SystemError {}

/** The metadata service answered something its protocol does not allow (a status, a malformed document). */
export class MetadataError extends SystemError {}

/** One request's limit: a service on the link answers in milliseconds when it is there at all. */
const requestTimeoutMs = 15_000;

/** Node's fetch; a failure to connect or a timeout is MetadataUnreachableError. */
export function fetchMetadataHttp(signal: AbortSignal, timeoutMs = requestTimeoutMs): MetadataHttp {
  return {
    async request(url, req = {}) {
      try {
        const limit = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
        if (req.lowSourcePort) return await lowPortRequest(url, req, limit);
        const res = await fetch(url, {
          method: req.method ?? "GET",
          headers: req.headers ?? {},
          ...(req.body !== undefined ? { body: req.body } : {}),
          redirect: "follow",
          signal: limit,
        });
        return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
      } catch (err) {
        if (signal.aborted) throw err;
        throw new MetadataUnreachableError(
          `${req.method ?? "GET"} ${url}: ${describeError(err)}`,
          { url },
          { cause: err },
        );
      }
    },
  };
}

/**
 * The body of a 200 answer; undefined for a 404 (the service has no such key). A 5xx or 429
 * is MetadataUnreachableError, any other status MetadataError.
 */
export async function getOptional(
  http: MetadataHttp,
  url: string,
  req: MetadataRequest = {},
): Promise<Buffer | undefined> {
  const reply = await http.request(url, req);
  if (reply.status === 200) return reply.body;
  if (reply.status === 404) return undefined;
  const message = `${req.method ?? "GET"} ${url}: status ${reply.status}: ${JSON.stringify(reply.body.subarray(0, 64).toString("utf8"))}`;
  if (reply.status >= 500 || reply.status === 429)
    throw new MetadataUnreachableError(message, { url, status: reply.status });
  throw new MetadataError(message, { url, status: reply.status });
}

/** The body of a 200 answer; a 404 is MetadataError (the key is one the protocol always has). */
export async function getRequired(http: MetadataHttp, url: string, req: MetadataRequest = {}): Promise<Buffer> {
  const body = await getOptional(http, url, req);
  if (body === undefined) throw new MetadataError(`${req.method ?? "GET"} ${url}: not found`, { url, status: 404 });
  return body;
}

/** A JSON document; one that does not parse is MetadataError naming where it came from. */
export function parseJson(body: Buffer, from: string): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw new MetadataError(`${from}: malformed JSON: ${describeError(err)}`, { from }, { cause: err });
  }
}
