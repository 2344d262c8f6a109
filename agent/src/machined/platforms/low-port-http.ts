// A metadata request from a privileged source port, as Talos's download.WithLowSrcPort sends
// it (a random port of 100..611): Scaleway serves user data only to a request from below 1024,
// which only root can bind. A port that is taken fails like an unreachable service, so the
// retry that follows tries another.

import http from "node:http";
import { describeError } from "../../errors.js";
import { type MetadataReply, type MetadataRequest, MetadataUnreachableError } from "./metadata-http.js";

const lowPortBase = 100;
const lowPortSpan = 512;

export function lowPortRequest(
  url: string,
  req: MetadataRequest,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<MetadataReply> {
  const method = req.method ?? "GET";
  const localPort = lowPortBase + Math.floor(Math.random() * lowPortSpan);
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) => {
      if (signal.aborted) reject(err);
      else
        reject(
          new MetadataUnreachableError(
            `${method} ${url} from port ${localPort}: ${describeError(err)}`,
            { url, localPort },
            { cause: err },
          ),
        );
    };
    // A fresh connection each time (no agent): a pooled one would keep the port it was made from.
    const request = http.request(
      url,
      {
        method,
        headers: req.headers ?? {},
        localPort,
        agent: false,
        signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      },
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
