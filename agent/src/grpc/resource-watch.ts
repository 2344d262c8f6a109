// Following one resource (apid its certificates and names): over machined's COSI API from apid's own
// process, or in machined's state when apid runs inside machined. Either way the spec arrives in its
// protobuf shape (snake_case fields, bytes as Buffer), or undefined once the resource is gone.

import * as grpc from "@grpc/grpc-js";
import { decode, serviceDefinition } from "../api/index.js";
import type { ResourceDefinitionInput } from "../resources/definitions.js";
import type { ResourceState } from "../resources/state.js";
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

export interface FollowedResource<S> {
  namespace: string;
  type: string;
  id: string;
  /** Its definition: the protobuf spec type and how a spec becomes one. */
  definition: Pick<ResourceDefinitionInput<S>, "protoSpecType" | "toProto">;
}

export type SpecListener = (spec: Record<string, unknown> | undefined) => void;

/** Where apid follows resources from. */
export interface ResourceFeed {
  /** `onSpec` gets the spec on every create and update, undefined while the resource does not exist; until `signal` aborts. */
  follow<S>(target: FollowedResource<S>, signal: AbortSignal, onSpec: SpecListener): void;
  close(): void;
}

/**
 * machined's COSI State API on its unix socket. A watch that ends (machined restarting) is opened again.
 */
export function cosiFeed(socket: string, log: Logger): ResourceFeed {
  const State = grpc.makeGenericClientConstructor(serviceDefinition("cosi.resource.State"), "State");
  // The generic constructor's methods are untyped; WatchClient names the one used.
  const client = new State(`unix:${socket}`, grpc.credentials.createInsecure()) as unknown as WatchClient & grpc.Client;
  const follow = <S>(target: FollowedResource<S>, signal: AbortSignal, onSpec: SpecListener): void => {
    if (signal.aborted) return;
    const md = new grpc.Metadata();
    md.add(roleKey, "os:admin");
    const stream = client.Watch(
      { namespace: target.namespace, type: target.type, id: target.id, options: {}, api_version: 1 },
      md,
    );
    const stop = () => stream.cancel();
    signal.addEventListener("abort", stop, { once: true });
    stream.on("data", (resp: { event?: WatchEvent[] }) => {
      for (const ev of resp.event ?? []) {
        if (ev.event_type === DESTROYED) onSpec(undefined);
        else if (ev.resource?.spec?.proto_spec)
          onSpec(decode(target.definition.protoSpecType, ev.resource.spec.proto_spec));
      }
    });
    // A watch machined ends, with an error or not (a buffer overrun ends it with OK), is opened again.
    whenStreamOver(stream, (st) => {
      signal.removeEventListener("abort", stop);
      if (signal.aborted) return;
      log.warn("resource watch ended; watching again", { type: target.type, code: st.code, error: st.details });
      setTimeout(() => follow(target, signal, onSpec), 1000).unref();
    });
  };
  return { follow, close: () => client.close() };
}

/**
 * machined's own state, for apid inside machined: no client, no encoding and decoding of each spec, and no
 * protobuf files loaded for it (all of which would run on machined's event loop while the node boots).
 */
export function stateFeed(state: ResourceState): ResourceFeed {
  return {
    follow<S>(target: FollowedResource<S>, signal: AbortSignal, onSpec: SpecListener): void {
      // A single-resource watch starts with the current state: "created", or "destroyed" when it does not exist.
      state.watch<S>({ namespace: target.namespace, type: target.type, id: target.id }, { signal }, (ev) => {
        if (ev.type === "destroyed") onSpec(undefined);
        // toProto builds the message as a plain object keyed by field name, which is what a listener reads.
        else if (ev.type === "created" || ev.type === "updated")
          onSpec(target.definition.toProto(ev.resource.spec) as Record<string, unknown>);
      });
    },
    close: () => undefined,
  };
}
