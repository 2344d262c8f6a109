// Following one resource over machined's COSI API (apid its certificates and names),
// watched again whenever the watch ends, until aborted.

import * as grpc from "@grpc/grpc-js";
import { decode, serviceDefinition } from "../api/index.js";
import { roleKey } from "./metadata.js";
import { whenStreamOver } from "./stream-outcome.js";
import type { Logger } from "../log.js";

interface WatchEvent {
  resource?: { spec?: { proto_spec?: Buffer } };
  event_type?: number;
}
interface WatchClient {
  Watch(req: object, md: grpc.Metadata): grpc.ClientReadableStream<{ event?: WatchEvent[] }>;
}

const DESTROYED = 2;

/** A COSI State client on machined's unix socket. */
export function runtimeClient(socket: string): { client: WatchClient; close(): void } {
  const State = grpc.makeGenericClientConstructor(serviceDefinition("cosi.resource.State"), "State");
  const client = new State(`unix:${socket}`, grpc.credentials.createInsecure());
  // The generic constructor's methods are untyped; WatchClient names the one used.
  return { client: client as unknown as WatchClient, close: () => client.close() };
}

export interface WatchTarget {
  namespace: string;
  type: string;
  id: string;
  /** Protobuf type of the spec (the resource definition's protoSpecType). */
  specType: string;
}

/**
 * Follows one resource: `onSpec` gets the decoded spec on every create/update and
 * undefined when it is destroyed. The watch is opened again after a failure
 * (machined restarting) until `signal` aborts.
 */
export function watchResource(client: WatchClient, target: WatchTarget, signal: AbortSignal, log: Logger, onSpec: (spec: Record<string, unknown> | undefined) => void): void {
  const start = () => {
    if (signal.aborted) return;
    const md = new grpc.Metadata();
    md.add(roleKey, "os:admin");
    const stream = client.Watch({ namespace: target.namespace, type: target.type, id: target.id, options: {}, api_version: 1 }, md);
    const stop = () => stream.cancel();
    signal.addEventListener("abort", stop, { once: true });
    stream.on("data", (resp: { event?: WatchEvent[] }) => {
      for (const ev of resp.event ?? []) {
        if (ev.event_type === DESTROYED) onSpec(undefined);
        else if (ev.resource?.spec?.proto_spec) onSpec(decode(target.specType, ev.resource.spec.proto_spec));
      }
    });
    // A watch machined ends, with an error or not (a buffer overrun ends it with OK), is opened again.
    whenStreamOver(stream, (st) => {
      signal.removeEventListener("abort", stop);
      if (signal.aborted) return;
      log.warn("resource watch ended; watching again", { type: target.type, code: st.code, error: st.details });
      setTimeout(start, 1000).unref();
    });
  };
  start();
}
