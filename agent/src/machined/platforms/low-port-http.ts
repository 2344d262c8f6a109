// A metadata request from a privileged source port, as Talos's download.WithLowSrcPort sends
// it (a random port of 100..611): Scaleway serves user data only to a request from below 1024,
// which only root can bind. A port that is taken fails like any connection that cannot be made,
// so the retry that follows tries another.

import http from "node:http";
import { SystemError } from "../../errors.js";

export interface LowPortRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** The request could not be made or answered from this port. */
export class LowPortRequestError extends SystemError {}

const lowPortBase = 100;
const lowPortSpan = 512;

export function lowPortRequest(
  url: string,
  req: LowPortRequest,
  signal: AbortSignal,
): Promise<{ status: number; body: Buffer }> {
  const localPort = lowPortBase + Math.floor(Math.random() * lowPortSpan);
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) =>
      reject(new LowPortRequestError(`from port ${localPort}`, { localPort }, { cause: err }));
    // A fresh connection each time (no agent): a pooled one would keep the port it was made from.
    const request = http.request(
      url,
      { method: req.method ?? "GET", headers: req.headers ?? {}, localPort, agent: false, signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on("error", fail);
      },
    );
    request.on("error", fail);
    request.end(req.body);
  });
}
