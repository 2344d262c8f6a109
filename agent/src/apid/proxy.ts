import * as grpc from "@grpc/grpc-js";
import type { SurfaceCall } from "../grpc/server.js";
import { describeError } from "../errors.js";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { encodeMetadataMessage, failedNodeReply, tagStreamMessage, tagUnaryReply } from "../grpc/aggregate.js";

export interface ProxiedMethod {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
}

/** Who the caller is, as apid decided from its certificate (or maintenance mode). */
export interface Caller {
  roles: string[];
  /** Came in on the maintenance listener (machined then applies maintenance rules). */
  maintenance?: boolean;
}

export interface ProxyOptions {
  methods: ProxiedMethod[];
  /** A client bound to machined's socket. */
  local: grpc.Client;
  /** Authenticates a call from its transport; throws a grpc-shaped error to refuse. */
  authenticate(call: SurfaceCall): Caller;
  /** Addresses and names that mean "this node" in `node`/`nodes` metadata. */
  isSelf(target: string): boolean;
}

const identity = (b: Buffer): Buffer => b;

type Route =
  | { kind: "local" }
  | { kind: "fanout"; targets: string[] }
  | { kind: "error"; error: Partial<grpc.StatusObject> };

// Metadata that must not be forwarded: transport headers and the routing keys we consume.
const dropKeys = new Set(["nodes", "node", roleKey, listenerKey, ":authority", "content-type", "user-agent", "te", "grpc-timeout", "grpc-accept-encoding", "accept-encoding", "grpc-encoding"]);

function route(path: string, md: grpc.Metadata, isSelf: (t: string) => boolean): Route {
  if (md.get("proxyfrom").length > 0) return { kind: "local" };
  // grpc-js joins repeated header values with ", "; a node name never holds a comma.
  const node = md.get("node").flatMap((v) => String(v).split(",")).map((s) => s.trim()).filter(Boolean);
  const nodes = md.get("nodes").flatMap((v) => String(v).split(",")).map((s) => s.trim()).filter(Boolean);
  if (node.length > 1) {
    return { kind: "error", error: { code: grpc.status.INVALID_ARGUMENT, details: "node metadata must be single-valued" } };
  }
  if (nodes.length > 0) {
    if (path.startsWith("/cosi.")) {
      return { kind: "error", error: { code: grpc.status.INVALID_ARGUMENT, details: "one-2-many proxying is not supported for COSI methods" } };
    }
    if (nodes.every(isSelf)) return { kind: "fanout", targets: nodes };
    return remoteUnsupported(nodes.filter((n) => !isSelf(n)));
  }
  if (node.length === 1) {
    if (isSelf(node[0]!)) return { kind: "local" };
    return remoteUnsupported(node);
  }
  return { kind: "local" };
}

function remoteUnsupported(targets: string[]): Route {
  // Proxying to other nodes' apid needs trustd-issued client certificates (a later issue).
  return {
    kind: "error",
    error: { code: grpc.status.UNAVAILABLE, details: `proxying to other nodes is not supported yet: ${targets.join(", ")}` },
  };
}

function forwardedMetadata(md: grpc.Metadata, caller: Caller): grpc.Metadata {
  const out = new grpc.Metadata();
  for (const k of Object.keys(md.getMap())) {
    if (dropKeys.has(k) || k.startsWith("grpc-")) continue;
    for (const value of md.get(k)) out.add(k, value);
  }
  for (const r of caller.roles) out.add(roleKey, r);
  if (caller.maintenance) out.set(listenerKey, "maintenance");
  return out;
}

function asStatus(err: unknown): Partial<grpc.StatusObject> {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code === "number") {
    return { code: e.code, details: e.details ?? e.message ?? "", metadata: e.metadata ?? new grpc.Metadata() };
  }
  return { code: grpc.status.INTERNAL, details: describeError(err) };
}

/**
 * Builds the apid gRPC server: every known method is registered with identity
 * serializers and relayed as raw bytes, so apid never decodes a request.
 */
export function buildProxyServer(opts: ProxyOptions): grpc.Server {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 32 * 1024 * 1024,
    "grpc.max_send_message_length": 32 * 1024 * 1024,
  });
  for (const m of opts.methods) {
    if (!m.requestStream && !m.responseStream) {
      server.register(m.path, unary(m, opts), identity, identity, "unary");
    } else if (!m.requestStream && m.responseStream) {
      server.register(m.path, serverStream(m, opts), identity, identity, "serverStream");
    } else if (m.requestStream && !m.responseStream) {
      server.register(m.path, clientStream(m, opts), identity, identity, "clientStream");
    } else {
      server.register(m.path, bidi(m, opts), identity, identity, "bidi");
    }
  }
  return server;
}

function admit(call: SurfaceCall, m: ProxiedMethod, opts: ProxyOptions):
  | { caller: Caller; route: Route }
  | { error: Partial<grpc.StatusObject> } {
  let caller: Caller;
  try {
    caller = opts.authenticate(call);
  } catch (err) {
    return { error: asStatus(err) };
  }
  return { caller, route: route(m.path, call.metadata, opts.isSelf) };
}

function unary(m: ProxiedMethod, opts: ProxyOptions): grpc.handleUnaryCall<Buffer, Buffer> {
  return (call, callback) => {
    const a = admit(call, m, opts);
    if ("error" in a) return callback(a.error as grpc.ServiceError);
    if (a.route.kind === "error") return callback(a.route.error as grpc.ServiceError);
    const md = forwardedMetadata(call.metadata, a.caller);
    const once = () =>
      new Promise<Buffer>((resolve, reject) => {
        const c = opts.local.makeUnaryRequest(m.path, identity, identity, call.request, md, (err, resp) =>
          err ? reject(err) : resolve(resp ?? Buffer.alloc(0)),
        );
        call.on("cancelled", () => c.cancel());
      });
    if (a.route.kind === "local") {
      once().then((resp) => callback(null, resp), (err) => callback(asStatus(err) as grpc.ServiceError));
      return;
    }
    const targets = a.route.targets;
    Promise.all(
      targets.map((t) =>
        once().then(
          (resp) => tagUnaryReply(resp, t),
          (err) => {
            const st = asStatus(err);
            return failedNodeReply({ hostname: t, error: st.details ?? "", status: { code: st.code ?? 2, message: st.details ?? "" } });
          },
        ),
      ),
    ).then((parts) => callback(null, Buffer.concat(parts)), (err) => callback(asStatus(err) as grpc.ServiceError));
  };
}

function relayStream(
  upstream: grpc.ClientReadableStream<Buffer>,
  down: grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>,
  tag: string | undefined,
  onDone: (status: Partial<grpc.StatusObject> | undefined) => void,
): void {
  upstream.on("data", (b: Buffer) => down.write(tag === undefined ? b : tagStreamMessage(b, tag)));
  upstream.on("error", (err) => onDone(asStatus(err)));
  upstream.on("status", (st: grpc.StatusObject) => {
    if (st.code === grpc.status.OK) onDone(undefined);
  });
  down.on("cancelled", () => upstream.cancel());
}

function serverStream(m: ProxiedMethod, opts: ProxyOptions): grpc.handleServerStreamingCall<Buffer, Buffer> {
  return (call) => {
    const a = admit(call, m, opts);
    const fail = (st: Partial<grpc.StatusObject>) => call.emit("error", st);
    if ("error" in a) return fail(a.error);
    if (a.route.kind === "error") return fail(a.route.error);
    const md = forwardedMetadata(call.metadata, a.caller);
    const targets = a.route.kind === "fanout" ? a.route.targets : [undefined];
    let pending = targets.length;
    for (const t of targets) {
      const up = opts.local.makeServerStreamRequest(m.path, identity, identity, call.request, md);
      relayStream(up, call, t, (st) => {
        if (st && t === undefined) return fail(st);
        if (st && t !== undefined) {
          // A failing node in a fan-out contributes one error message instead of failing the call.
          call.write(encodeMetadataMessage({ hostname: t, error: st.details ?? "", status: { code: st.code ?? 2, message: st.details ?? "" } }));
        }
        if (--pending === 0) call.end();
      });
    }
  };
}

function clientStream(m: ProxiedMethod, opts: ProxyOptions): grpc.handleClientStreamingCall<Buffer, Buffer> {
  return (call, callback) => {
    const a = admit(call, m, opts);
    if ("error" in a) return callback(a.error as grpc.ServiceError);
    if (a.route.kind !== "local") {
      const err = a.route.kind === "error" ? a.route.error : { code: grpc.status.INVALID_ARGUMENT, details: "client streaming methods are proxied one-to-one only" };
      return callback(err as grpc.ServiceError);
    }
    const up = opts.local.makeClientStreamRequest(m.path, identity, identity, forwardedMetadata(call.metadata, a.caller), (err, resp) =>
      err ? callback(asStatus(err) as grpc.ServiceError) : callback(null, resp ?? Buffer.alloc(0)),
    );
    call.on("data", (b: Buffer) => up.write(b));
    call.on("end", () => up.end());
    call.on("cancelled", () => up.cancel());
  };
}

function bidi(m: ProxiedMethod, opts: ProxyOptions): grpc.handleBidiStreamingCall<Buffer, Buffer> {
  return (call) => {
    const a = admit(call, m, opts);
    const fail = (st: Partial<grpc.StatusObject>) => call.emit("error", st);
    if ("error" in a) return fail(a.error);
    if (a.route.kind !== "local") {
      return fail(a.route.kind === "error" ? a.route.error : { code: grpc.status.INVALID_ARGUMENT, details: "bidirectional methods are proxied one-to-one only" });
    }
    const up = opts.local.makeBidiStreamRequest(m.path, identity, identity, forwardedMetadata(call.metadata, a.caller));
    call.on("data", (b: Buffer) => up.write(b));
    call.on("end", () => up.end());
    relayStream(up, call, undefined, (st) => (st ? fail(st) : call.end()));
  };
}
