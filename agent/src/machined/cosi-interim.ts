// Interim COSI State handlers (Get/List/Watch with the access policy of
// reference §4.4) used until grpc/cosi-server.ts [resources] lands; then
// cmd/wiring.ts switches to it and this file goes away.
import type * as grpc from "@grpc/grpc-js";
import { NotFoundError, PermissionDeniedError } from "../errors.js";
import { unaryHandler, type ServiceImpl } from "../grpc/server.js";
import { Role } from "../grpc/roles.js";
import { encodeSpec, lookupDefinition, META_NAMESPACE, NAMESPACE_TYPE, yamlSpec } from "../resources/definitions.js";
import type { Resource } from "../resources/resource.js";
import type { ResourceState, WatchEvent } from "../resources/state.js";
import { callRoles } from "./access.js";

function wire(state: ResourceState, res: Resource, tomb = false) {
  const m = res.metadata;
  const def = lookupDefinition(state, m.type);
  return {
    metadata: {
      namespace: m.namespace, type: m.type, id: m.id,
      version: tomb || m.version === 0 ? "undefined" : String(m.version),
      owner: m.owner, phase: m.phase, created: m.created, updated: m.updated,
      finalizers: m.finalizers, labels: m.labels, annotations: m.annotations,
    },
    spec: tomb || !def || res.spec === undefined ? {} : { proto_spec: encodeSpec(def as never, res.spec as never), yaml_spec: yamlSpec(def as never, res.spec as never) },
  };
}

function check(state: ResourceState, namespace: string, type: string, md: grpc.Metadata): void {
  const def = lookupDefinition(state, type);
  if (!def) throw new PermissionDeniedError(`resource type ${JSON.stringify(type)} is not supported`);
  if (def.sensitive && !callRoles(md).includes(Role.admin)) throw new PermissionDeniedError("not authorized");
  if (!state.get(META_NAMESPACE, NAMESPACE_TYPE, namespace)) throw new PermissionDeniedError(`namespace ${JSON.stringify(namespace)} is not supported`);
}

const eventType = { created: 0, updated: 1, destroyed: 2, bootstrapped: 3 } as const;

export function interimCosi(state: ResourceState): ServiceImpl {
  const refuse = unaryHandler(async () => {
    throw new PermissionDeniedError("write access is not allowed");
  });
  return {
    Get: unaryHandler(async (req: { namespace: string; type: string; id: string }, call) => {
      check(state, req.namespace, req.type, call.metadata);
      const res = state.get(req.namespace, req.type, req.id);
      if (!res) throw new NotFoundError(`resource ${req.type}(${req.namespace}/${req.id}@undefined) doesn't exist`);
      return { resource: wire(state, res) };
    }),
    List: async (call: grpc.ServerWritableStream<{ namespace: string; type: string }, unknown>) => {
      check(state, call.request.namespace, call.request.type, call.metadata);
      for (const res of state.list(call.request.namespace, call.request.type)) call.write({ resource: wire(state, res) });
      call.end();
    },
    Watch: async (call: grpc.ServerWritableStream<{ namespace: string; type: string; id?: string; options?: { bootstrap_contents?: boolean }; api_version?: number }, unknown>) => {
      const req = call.request;
      check(state, req.namespace, req.type, call.metadata);
      const ac = new AbortController();
      call.on("cancelled", () => ac.abort());
      call.on("close", () => ac.abort());
      call.write({ event: [] });
      const single = typeof req.id === "string" && req.id !== undefined && Object.prototype.hasOwnProperty.call(req, "id") && req.id !== "";
      state.watch(
        single ? { namespace: req.namespace, type: req.type, id: req.id! } : { namespace: req.namespace, type: req.type },
        { bootstrap: !single && !!req.options?.bootstrap_contents, signal: ac.signal },
        (ev: WatchEvent) => {
          if (ev.type === "bootstrapped" && (req.api_version ?? 0) < 1) return;
          const tomb = ev.type === "bootstrapped" || ev.resource.metadata.version === 0;
          const out: Record<string, unknown> = { resource: wire(state, ev.resource, tomb), event_type: eventType[ev.type] };
          if (ev.old) out["old"] = wire(state, ev.old);
          call.write({ event: [out] });
        },
      );
    },
    Create: refuse,
    Update: refuse,
    Destroy: refuse,
  };
}
