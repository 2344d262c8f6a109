// One Node object followed through the API server as client-go's informer follows it:
// a list narrowed to the name (the version to watch from, and the Node if it exists),
// then a watch from that version, its events read as they stream; when the watch ends
// or fails, list again. Every change is reported with the Node as it now is (undefined:
// not registered, or deleted).

import https from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../../errors.js";
import type { Logger } from "../../log.js";
import { KubeApiError, KubeClient, type KubeCredentials } from "./kube-client.js";
import type { KubeNode } from "./node-patch.js";

/** The wait before listing again after a failure, doubling per failure in a row (as client-go's reflector backs off). */
const RELIST_DELAY_MS = 1_000;
const RELIST_DELAY_MAX_MS = 30_000;
/** The API server ends a watch after this long; the loop then lists again (client-go picks 5-10 min). */
const WATCH_TIMEOUT_S = 300;

interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeNode;
}

/** An ERROR event's object is a Status (e.g. 410 Gone: the version watched from is too old). */
interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

/** Streams newline-delimited watch events of `path` until the server ends the response or `signal` aborts. */
function streamEvents(creds: KubeCredentials, path: string, signal: AbortSignal, onEvent: (e: WatchEvent) => void) {
  return new Promise<void>((resolve, reject) => {
    const req = https.request(new URL(path, creds.server), {
      ca: creds.ca,
      cert: creds.cert,
      key: creds.key,
      headers: { Accept: "application/json" },
      signal,
    });
    req.on("response", (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new KubeApiError(res.statusCode ?? 0, "", `watch ${path}: status ${res.statusCode}`));
        return;
      }
      const fail = (err: unknown) => {
        req.destroy();
        reject(err);
      };
      let buffered = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffered += chunk;
        for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          let event: WatchEvent;
          try {
            event = JSON.parse(line) as WatchEvent;
          } catch (err) {
            return fail(err);
          }
          if (event.type !== "ERROR") {
            onEvent(event);
            continue;
          }
          // An ERROR event carries a Status where the others carry a Node.
          const st = event.object as WatchStatus;
          return fail(new KubeApiError(st.code ?? 0, st.reason ?? "", `watch ${path}: ${st.message ?? ""}`));
        }
      });
      res.on("end", resolve);
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

export class NodeWatcher {
  private readonly ac = new AbortController();
  private current: KubeNode | undefined;

  constructor(
    readonly nodename: string,
    private readonly creds: KubeCredentials,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {
    void this.run();
  }

  /** The Node as last seen (undefined: not registered, or not read yet). */
  get node(): KubeNode | undefined {
    return this.current;
  }

  stop(): void {
    this.ac.abort();
  }

  private set(node: KubeNode | undefined): void {
    this.current = node;
    this.onChange();
  }

  private async run(): Promise<void> {
    const signal = this.ac.signal;
    const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${this.nodename}`)}`;
    const client = new KubeClient(this.creds);
    let delay = RELIST_DELAY_MS;
    try {
      while (!signal.aborted) {
        try {
          const list = await client.request<{ metadata: { resourceVersion: string }; items: KubeNode[] }>(
            "GET",
            `/api/v1/nodes?${selector}`,
            undefined,
            signal,
          );
          this.set(list.items[0]);
          delay = RELIST_DELAY_MS;
          const watch = `/api/v1/nodes?${selector}&watch=1&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=${WATCH_TIMEOUT_S}`;
          await streamEvents(this.creds, watch, signal, (e) => {
            if (e.type === "ADDED" || e.type === "MODIFIED") this.set(e.object);
            else if (e.type === "DELETED") this.set(undefined);
          });
        } catch (err) {
          if (signal.aborted) return;
          this.log.warn(`node ${this.nodename} watch error: ${describeError(err)}`, { retryInMs: delay });
          await sleep(delay, undefined, { signal }).catch(() => undefined);
          delay = Math.min(delay * 2, RELIST_DELAY_MAX_MS);
        }
      }
    } finally {
      client.close();
    }
  }
}
