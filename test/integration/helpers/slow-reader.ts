// A client that reads a server stream at its own pace: paused for `ms` after every
// `every` messages (0: never), so a relay in between has to hold the rest back.
import type * as grpc from "@grpc/grpc-js";
import type { NodeClient } from "../../../agent/src/client/client.js";

export interface Pace {
  every: number;
  ms?: number;
}

export function readSlowly<Res>(
  client: NodeClient,
  service: NodeClient["machine"],
  method: string,
  request: object,
  pace: Pace,
  deadlineMs = 60_000,
): Promise<Res[]> {
  return new Promise((resolve, reject) => {
    const out: Res[] = [];
    const stream: grpc.ClientReadableStream<Res> = service[method](request, client.metadata(), {
      deadline: Date.now() + deadlineMs,
    });
    stream.on("data", (m: Res) => {
      out.push(m);
      if (pace.every > 0 && out.length % pace.every === 0) {
        stream.pause();
        setTimeout(() => stream.resume(), pace.ms ?? 0);
      }
    });
    stream.on("error", reject);
    stream.on("end", () => resolve(out));
  });
}
