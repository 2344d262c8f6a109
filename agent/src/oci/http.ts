// One HTTP(S) request to a registry with the endpoint's TLS settings; redirects
// followed (blob storage often lives elsewhere), credentials dropped on a host change.

import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { RegistryError } from "./errors.js";
import type { RegistryTls } from "./hosts.js";

export interface HttpRequest {
  method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH";
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer | (() => Readable);
  tls?: RegistryTls;
  /** Idle time after which the request is abandoned. */
  timeoutMs?: number;
}

const maxRedirects = 5;

export async function httpRequest(req: HttpRequest): Promise<IncomingMessage> {
  let url = req.url;
  let headers = { ...req.headers };
  for (let hop = 0; ; hop++) {
    const res = await once({ ...req, url, headers });
    const location = res.headers.location;
    if (req.method !== "GET" && req.method !== "HEAD") return res;
    if (![301, 302, 303, 307, 308].includes(res.statusCode ?? 0) || !location) return res;
    res.resume();
    if (hop >= maxRedirects)
      throw new RegistryError(`too many redirects fetching ${req.url.href}`, { url: req.url.href });
    const next = new URL(location, url);
    if (next.host !== url.host) {
      // Signed storage URLs carry their own authorization; ours must not leak to another host.
      const { authorization: _dropped, ...rest } = headers;
      headers = rest;
    }
    url = next;
  }
}

function once(req: HttpRequest & { headers: Record<string, string> }): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const secure = req.url.protocol === "https:";
    const options: https.RequestOptions = { method: req.method, headers: { "user-agent": "basalt", ...req.headers } };
    if (secure && req.tls) {
      if (req.tls.ca) options.ca = req.tls.ca;
      if (req.tls.clientCert) options.cert = req.tls.clientCert;
      if (req.tls.clientKey) options.key = req.tls.clientKey;
      if (req.tls.insecureSkipVerify) options.rejectUnauthorized = false;
    }
    const r = (secure ? https : http).request(req.url, options, resolve);
    r.setTimeout(req.timeoutMs ?? 60_000, () =>
      r.destroy(
        new RegistryError(`no answer from ${req.url.host} in ${req.timeoutMs ?? 60_000} ms`, { url: req.url.href }),
      ),
    );
    r.on("error", (err) =>
      reject(
        err instanceof RegistryError
          ? err
          : new RegistryError(`${req.method} ${req.url.href} failed`, { url: req.url.href }, { cause: err }),
      ),
    );
    if (req.body === undefined) r.end();
    else if (Buffer.isBuffer(req.body)) r.end(req.body);
    else {
      const src = req.body();
      src.on("error", (err) => r.destroy(err));
      src.pipe(r);
    }
  });
}

/** Reads a response body up to `limit` bytes. */
export async function readBody(res: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of res) {
    const b = chunk as Buffer;
    n += b.length;
    if (n > limit) {
      res.destroy();
      throw new RegistryError(`response larger than ${limit} bytes`, { limit });
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}
