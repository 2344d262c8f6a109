// The `cosi.resource.State` service over a ResourceState: Get, List and Watch as
// the COSI v0.4 server behaves (cosi-state.md §4), behind Talos's read-only access
// policy (reference §4.4). Create/Update/Destroy are always refused, as on Talos.

import type * as grpc from "@grpc/grpc-js";
import {
  describeError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  UnimplementedError,
} from "../errors.js";
import { logger } from "../log.js";
import {
  META_NAMESPACE,
  NAMESPACE_TYPE,
  RESOURCE_DEFINITION_TYPE,
  type ResourceDefinitionSpec,
  lookupDefinition,
} from "../resources/definitions.js";
import { type LabelQuery, compileIdQuery, labelOpsByNumber, matchesLabelQueries } from "../resources/query.js";
import { type Resource, tombstone } from "../resources/resource.js";
import type { ResourceState, WatchEvent, WatchTarget } from "../resources/state.js";
import { type WireResource, wireResource } from "../resources/wire.js";
import { Role } from "./roles.js";
import type { ServiceImpl } from "./server.js";

const log = logger("cosi");

/** The calls this service handles (unary Get, server-streaming List/Watch). */
export type CosiCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

export interface CosiStateOptions {
  /** The caller's roles (e.g. from `talos-role` metadata, or os:reader in maintenance mode). */
  rolesOf(call: CosiCall): readonly string[];
  /**
   * Watch responses a slow client may leave unsent before its watch ends with an
   * ERRORED "buffer overrun" event (as COSI does), so a stuck client cannot grow
   * the daemon's memory without bound. Default 4096.
   */
  maxPendingResponses?: number;
}

/** Wire enum cosi.resource.EventType. */
export const EventType = { CREATED: 0, UPDATED: 1, DESTROYED: 2, BOOTSTRAPPED: 3, ERRORED: 4 } as const;

interface WireEvent {
  resource: WireResource;
  event_type: number;
  old?: WireResource;
  error?: string;
}

// Request shapes as agent/src/api decodes them (snake_case, defaults filled).
interface WireLabelQuery {
  terms?: { key?: string; op?: number; value?: string[]; invert?: boolean }[];
}
interface GetRequest {
  namespace: string;
  type: string;
  id: string;
}
interface ListRequest {
  namespace: string;
  type: string;
  options?: { label_query?: WireLabelQuery[]; id_query?: { regexp?: string } | null } | null;
}
interface WatchRequest {
  namespace: string;
  type: string;
  id?: string;
  /** Set to "id" by the decoder when the proto3-optional id is present. */
  _id?: string;
  options?: {
    bootstrap_contents?: boolean;
    tail_events?: number;
    label_query?: WireLabelQuery[];
    id_query?: { regexp?: string } | null;
    aggregated?: boolean;
  } | null;
  api_version?: number;
}

/**
 * Talos's per-resource read check (reference §4.4), applied after the method role check:
 * the type needs a ResourceDefinition, sensitive types need os:admin, the namespace must exist.
 */
export function checkReadAccess(state: ResourceState, namespace: string, type: string, roles: readonly string[]): void {
  const rd = state.get<ResourceDefinitionSpec>(META_NAMESPACE, RESOURCE_DEFINITION_TYPE, type.toLowerCase());
  if (!rd) throw new PermissionDeniedError(`resource type "${type}" is not supported`, { type });
  if (rd.spec.sensitivity === "sensitive" && !roles.includes(Role.admin)) {
    throw new PermissionDeniedError("not authorized", { type });
  }
  if (!state.get(META_NAMESPACE, NAMESPACE_TYPE, namespace)) {
    throw new PermissionDeniedError(`namespace "${namespace}" is not supported`, { namespace });
  }
}

function labelQueries(wire: WireLabelQuery[] | undefined): LabelQuery[] {
  return (wire ?? []).map((q) => ({
    terms: (q.terms ?? []).map((t) => {
      const op = labelOpsByNumber[t.op ?? 0];
      if (!op) throw new InvalidInputError(`unknown label term operation ${t.op}`);
      return { key: t.key ?? "", op, value: t.value ?? [], invert: t.invert ?? false };
    }),
  }));
}

// Syntax JavaScript accepts but Go's RE2 (what Talos compiles id queries with) refuses:
// lookarounds, backreferences and repeat counts over 1000. Each pattern skips escaped characters.
const lookaround = /(?:^|[^\\])(?:\\\\)*(\(\?<?[=!])/;
const backreference = /(?:^|[^\\])(?:\\\\)*(\\(?:[1-9]|k<))/;
const repeat = /\{(\d+)(?:,(\d*))?\}/g;

/** Refuses an id regexp Talos could not compile, with Go's wording. */
function checkIdRegexp(regexp: string): void {
  const refuse = (why: string): never => {
    throw new InvalidInputError(`invalid id query regexp ${JSON.stringify(regexp)}: error parsing regexp: ${why}`);
  };
  const look = lookaround.exec(regexp);
  if (look) refuse(`invalid or unsupported Perl syntax: \`${look[1]}\``);
  const back = backreference.exec(regexp);
  if (back) refuse(`invalid escape sequence: \`${back[1]}\``);
  for (const m of regexp.matchAll(repeat)) {
    if (Number(m[1]) > 1000 || Number(m[2] || 0) > 1000) refuse(`invalid repeat count: \`${m[0]}\``);
  }
}

/** Builds the filter of a list/watch request (label queries AND id regexp). */
function resourceFilter(
  labelQuery: WireLabelQuery[] | undefined,
  idRegexp: string | undefined,
): (r: Resource) => boolean {
  const queries = labelQueries(labelQuery);
  checkIdRegexp(idRegexp ?? "");
  const idRe = compileIdQuery(idRegexp ?? "");
  return (r) => (idRe === undefined || idRe.test(r.metadata.id)) && matchesLabelQueries(r.metadata.labels, queries);
}

const writeRefused = (): never => {
  throw new PermissionDeniedError("write access is not allowed");
};

/** grpc-js handlers for `cosi.resource.State`, to pass to addService. */
export function cosiStateImpl(state: ResourceState, opts: CosiStateOptions): ServiceImpl {
  const encode = (r: Resource): WireResource => wireResource(r, lookupDefinition(state, r.metadata.type));

  return {
    Get(call: grpc.ServerUnaryCall<GetRequest, unknown>, callback: grpc.sendUnaryData<unknown>): void {
      const { namespace, type, id } = call.request;
      checkReadAccess(state, namespace, type, opts.rolesOf(call as CosiCall));
      const res = state.get(namespace, type, id);
      if (!res) throw new NotFoundError(`resource ${type}(${namespace}/${id}) doesn't exist`, { namespace, type, id });
      callback(null, { resource: encode(res) });
    },

    List(call: grpc.ServerWritableStream<ListRequest, unknown>): void {
      const { namespace, type, options } = call.request;
      checkReadAccess(state, namespace, type, opts.rolesOf(call as CosiCall));
      const keep = resourceFilter(options?.label_query, options?.id_query?.regexp);
      // Encode everything first so an encoding failure fails the call instead of truncating it.
      const out = state.list(namespace, type).filter(keep).map(encode);
      for (const resource of out) call.write({ resource });
      call.end();
    },

    Watch(call: grpc.ServerWritableStream<WatchRequest, unknown>): void {
      const req = call.request;
      const { namespace, type } = req;
      checkReadAccess(state, namespace, type, opts.rolesOf(call as CosiCall));
      const o = req.options ?? {};
      const single = req._id === "id" || (req.id !== undefined && req.id !== "");
      const tail = o.tail_events ?? 0;
      const aggregated = o.aggregated ?? false;
      // Old clients (api_version < 1) do not know BOOTSTRAPPED/ERRORED events.
      const modern = (req.api_version ?? 0) >= 1;
      if (single) {
        if (o.bootstrap_contents)
          throw new UnimplementedError("bootstrap contents is not implemented for resource watch");
        if ((o.label_query ?? []).length > 0)
          throw new UnimplementedError("label queries are not implemented for resource watch");
      } else if (o.bootstrap_contents && tail > 0) {
        throw new InvalidInputError("bootstrap contents and tail events are mutually exclusive");
      }
      if (tail < 0) throw new InvalidInputError("tail events must not be negative");
      const keep = single ? () => true : resourceFilter(o.label_query, o.id_query?.regexp);

      const ac = new AbortController();
      const stop = (): void => ac.abort();
      call.on("cancelled", stop);
      call.on("error", stop);
      call.on("close", stop);
      if (call.cancelled) return;

      const maxPending = opts.maxPendingResponses ?? 4096;
      const send = (events: WireEvent[]): void => {
        if (ac.signal.aborted) return;
        call.write({ event: events });
        if (call.writableLength > maxPending) {
          const error = `buffer overrun: namespace ${JSON.stringify(namespace)} type ${JSON.stringify(type)}`;
          log.warn("watch buffer overrun", { namespace, type, pending: call.writableLength });
          ac.abort();
          if (modern)
            call.write({
              event: [{ resource: encode(tombstone(namespace, type)), event_type: EventType.ERRORED, error }],
            });
          call.end();
        }
      };
      const toWire = (e: WatchEvent): WireEvent | undefined => {
        switch (e.type) {
          case "bootstrapped":
            return modern ? { resource: encode(e.resource), event_type: EventType.BOOTSTRAPPED } : undefined;
          case "created":
            return keep(e.resource) ? { resource: encode(e.resource), event_type: EventType.CREATED } : undefined;
          case "destroyed":
            return keep(e.resource) ? { resource: encode(e.resource), event_type: EventType.DESTROYED } : undefined;
          case "updated": {
            const was = e.old !== undefined && keep(e.old);
            const is = keep(e.resource);
            if (was && is) return { resource: encode(e.resource), event_type: EventType.UPDATED, old: encode(e.old!) };
            if (is) return { resource: encode(e.resource), event_type: EventType.CREATED };
            if (was) return { resource: encode(e.resource), event_type: EventType.DESTROYED };
            return undefined;
          }
        }
      };

      // Readiness handshake: the Go client waits for this empty response before returning.
      send([]);
      let initial: WireEvent[] | undefined = [];
      const target: WatchTarget = single ? { namespace, type, id: req.id ?? "" } : { namespace, type };
      try {
        state.watch(
          target,
          { bootstrap: !single && o.bootstrap_contents, tailEvents: tail, signal: ac.signal },
          (e) => {
            let w: WireEvent | undefined;
            try {
              w = toWire(e);
            } catch (err) {
              // A resource that cannot be encoded ends the watch with an ERRORED event, as a failing COSI watch does.
              log.error("watch event encoding failed", { namespace, type, error: describeError(err) });
              if (modern)
                send([
                  {
                    resource: encode(tombstone(namespace, type)),
                    event_type: EventType.ERRORED,
                    error: (err as Error).message,
                  },
                ]);
              ac.abort();
              call.end();
              return;
            }
            if (!w) return;
            if (initial) initial.push(w);
            else send([w]);
          },
        );
      } catch (err) {
        ac.abort();
        throw err;
      }
      const first = initial;
      initial = undefined;
      if (aggregated) {
        if (first.length > 0) send(first);
      } else {
        for (const w of first) send([w]);
      }
    },

    Create: writeRefused,
    Update: writeRefused,
    Destroy: writeRefused,
  };
}
