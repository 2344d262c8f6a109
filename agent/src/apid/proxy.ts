import * as grpc from "@grpc/grpc-js";
import type { SurfaceCall } from "../grpc/server.js";
import { describeError } from "../errors.js";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { boundedStatusMessage } from "../grpc/status.js";
import { addressContainsPort } from "../grpc/tls-target.js";
import { messageSizeOptions } from "../grpc/limits.js";
import { callHeaders, oneReply, openFrameCall, openFrameStream, unaryFrameCall, type MessageSource, type RequestSink } from "./frame-stream.js";
import type { BackendSession } from "./raw-relay.js";
import { replyDeliveryInterceptor } from "./reply-delivery.js";
import { goCodeName } from "../grpc/call-log.js";
import { encodeMetadataMessage, failedNodeReply, tagStreamMessage, tagUnaryReply } from "../grpc/aggregate.js";

export interface ProxiedMethod {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
}

/** Who the caller is, as apid decided from its certificate (or maintenance mode, or its socket). */
export interface Caller {
  roles: string[];
  /** Came in on the maintenance listener (machined then applies maintenance rules). */
  maintenance?: boolean;
}

/** Where calls go: machined's socket, and other nodes' apid, each an HTTP/2 session whose calls are read as frames (frame-stream.ts). */
export interface Backends {
  /** machined's socket. */
  local: BackendSession;
  /** Whether this apid holds a client certificate to forward with (workers do not). */
  readonly canForward: boolean;
  /** The mutual-TLS session to another node's apid; undefined when this apid cannot forward. */
  remote(target: string): BackendSession | undefined;
}

export interface ProxyOptions {
  methods: ProxiedMethod[];
  backends: Backends;
  /** Authenticates a call from its transport; throws a grpc-shaped error to refuse. */
  authenticate(call: SurfaceCall): Caller;
  /** Addresses and names that mean "this node" in `node`/`nodes` metadata. */
  isSelf(target: string): boolean;
  /** How long one node of a streamed fan-out may take to connect. Default 10 s. */
  connectTimeoutMs?: number;
  /** machined's socket (unix:...), where the delivery of an apply's reply is reported; absent: not reported. */
  machinedTarget?: string;
  /** Nodes of one fan-out called at the same time. Default 16. */
  maxConcurrentTargets?: number;
}

const identity = (b: Buffer): Buffer => b;

/** A destination of one call: this node's machined, or another node's apid; `tag` is the hostname appended in a fan-out. */
export interface Leg<C> {
  client: C;
  remote: boolean;
  tag?: string;
}

export type Route<C> =
  | { kind: "one"; leg: Leg<C> }
  | { kind: "many"; legs: Leg<C>[] }
  | { kind: "error"; error: Pick<grpc.StatusObject, "code" | "details"> };

/** What a route can lead to: this node's machined, other nodes' apid (when this apid can forward). */
export interface RouteEnds<C> {
  local: C;
  /** The way to another node's apid; undefined when this apid cannot forward. */
  remote(target: string): C | undefined;
  readonly canForward: boolean;
  isSelf(target: string): boolean;
}

// Metadata that must not be forwarded: transport headers and the routing keys we consume.
const dropKeys = new Set(["nodes", "node", "proxyfrom", roleKey, listenerKey, ":authority", "content-type", "user-agent", "te", "grpc-timeout", "grpc-accept-encoding", "accept-encoding", "grpc-encoding"]);

const refused = <C>(code: grpc.status, details: string): Route<C> => ({ kind: "error", error: { code, details } });
// Talos's apid makes no backend for a target naming a port (apid's is always 50000): Internal, with Go's %q of
// the target, which JSON's quoting matches for the ASCII a metadata value holds.
const invalidTarget = <C>(target: string): Route<C> => refused(grpc.status.INTERNAL, `invalid target ${JSON.stringify(target)}`);

function values(md: grpc.Metadata, key: string): string[] {
  // grpc-js joins repeated header values with ", "; a node name never holds a comma.
  return md.get(key).flatMap((v) => String(v).split(",")).map((s) => s.trim()).filter(Boolean);
}

/** The director (reference §3): which backends serve a call, from its `proxyfrom`, `node` and `nodes` values. */
export function route<C>(path: string, valuesOf: (key: string) => string[], ends: RouteEnds<C>): Route<C> {
  // Talos matches a target against this node's addresses and names as they are, so one naming a port is never this node.
  const isSelf = (t: string) => !addressContainsPort(t) && ends.isSelf(t);
  const local: Leg<C> = { client: ends.local, remote: false };
  if (valuesOf("proxyfrom").length > 0) return { kind: "one", leg: local };
  const node = valuesOf("node");
  const nodes = valuesOf("nodes");
  if (node.length > 1) return refused(grpc.status.INVALID_ARGUMENT, "node metadata must be single-valued");
  // A node that cannot forward serves a call naming only itself as if it named nothing.
  if (!ends.canForward && nodes.length === 1 && isSelf(nodes[0]!)) return { kind: "one", leg: local };
  if (nodes.length > 0) {
    if (path.startsWith("/cosi.")) return refused(grpc.status.INVALID_ARGUMENT, "one-2-many proxying is not supported for COSI methods");
    const legs: Leg<C>[] = [];
    for (const t of nodes) {
      if (ends.canForward && addressContainsPort(t)) return invalidTarget(t);
      // This node answers from machined directly rather than through its own TLS listener: same reply, one hop less.
      if (isSelf(t)) {
        legs.push({ ...local, tag: t });
        continue;
      }
      const client = ends.remote(t);
      if (!client) return refused(grpc.status.PERMISSION_DENIED, "no request forwarding");
      legs.push({ client, remote: true, tag: t });
    }
    return { kind: "many", legs };
  }
  if (node.length === 1) {
    if (ends.canForward && addressContainsPort(node[0]!)) return invalidTarget(node[0]!);
    if (isSelf(node[0]!)) return { kind: "one", leg: local };
    const client = ends.remote(node[0]!);
    if (!client) return refused(grpc.status.PERMISSION_DENIED, "no request forwarding");
    return { kind: "one", leg: { client, remote: true } };
  }
  return { kind: "one", leg: local };
}

function routeOf(path: string, md: grpc.Metadata, backends: Backends, isSelf: (t: string) => boolean): Route<BackendSession> {
  return route(path, (k) => values(md, k), { local: backends.local, remote: (t) => backends.remote(t), canForward: backends.canForward, isSelf });
}

/**
 * Metadata sent to a backend: the caller's `md`, without routing keys, with the caller's roles; to another
 * node's apid `proxyfrom` names the host the caller addressed (its :authority), as Talos's apid does.
 */
export function forwardedMetadata(md: grpc.Metadata, caller: Caller, remote: boolean, authority: string | undefined): grpc.Metadata {
  const out = new grpc.Metadata();
  for (const k of Object.keys(md.getMap())) {
    if (dropKeys.has(k) || k.startsWith("grpc-")) continue;
    for (const value of md.get(k)) out.add(k, value);
  }
  for (const r of caller.roles) out.add(roleKey, r);
  if (remote) out.set("proxyfrom", authority || "unknown");
  else if (caller.maintenance) out.set(listenerKey, "maintenance");
  return out;
}

const callMetadata = (call: SurfaceCall, caller: Caller, leg: Leg<BackendSession>) => forwardedMetadata(call.metadata, caller, leg.remote, call.getHost());

/** A backend failure as the status apid reports (message bounded, so it always fits a trailer). */
export function asStatus(err: unknown): grpc.StatusObject {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code === "number") {
    return { code: e.code, details: boundedStatusMessage(e.details ?? e.message ?? ""), metadata: e.metadata ?? new grpc.Metadata() };
  }
  return { code: grpc.status.INTERNAL, details: boundedStatusMessage(describeError(err)), metadata: new grpc.Metadata() };
}

const asError = (st: Partial<grpc.StatusObject>): grpc.ServiceError =>
  Object.assign(new Error(st.details ?? ""), { code: st.code ?? grpc.status.UNKNOWN, details: st.details ?? "", metadata: st.metadata ?? new grpc.Metadata() });

/** The error entry of a node that failed in a fan-out: `error` as Talos's apid words it (the status error's text), and the status. */
export function failedNode(tag: string, st: Pick<grpc.StatusObject, "code" | "details">) {
  // Talos's apid words a failed node's error as grpc-go prints a status.
  const code = goCodeName(st.code);
  return { hostname: tag, error: `rpc error: code = ${code} desc = ${st.details}`, status: { code: st.code, message: st.details } };
}

/** Runs `fns` with at most `limit` of them in flight at once, keeping the order of results. */
export async function bounded<T>(fns: (() => Promise<T>)[], limit: number): Promise<T[]> {
  const out: T[] = new Array(fns.length);
  let next = 0;
  const worker = async () => {
    while (next < fns.length) {
      const i = next++;
      out[i] = await fns[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, fns.length) }, worker));
  return out;
}

/**
 * A unary fan-out's reply: every leg's answer tagged with its node, a failing leg's error entry in its place,
 * in the order of the legs (at most `limit` in flight), as Talos's one-to-many proxy merges them.
 */
export async function mergedReplies<C>(legs: Leg<C>[], send: (leg: Leg<C>) => Promise<Buffer>, limit: number): Promise<Buffer> {
  const perLeg = legs.map((leg) => () =>
    send(leg).then(
      (resp) => tagUnaryReply(resp, leg.tag!),
      // A failing node contributes an error entry beside the others' answers.
      (err: unknown) => failedNodeReply(failedNode(leg.tag!, asStatus(err))),
    ),
  );
  return Buffer.concat(await bounded(perLeg, limit));
}

// Every leg gets the caller's deadline and no other, as Talos's director passes the caller's context on:
// a node that takes minutes (a pull, a snapshot) still answers.
function deadlineOf(call: SurfaceCall): grpc.Deadline {
  const own = call.getDeadline();
  return own instanceof Date ? own.getTime() : own;
}

/**
 * Builds the apid gRPC server: every known method is registered with identity
 * serializers and relayed as raw bytes, so apid never decodes a request.
 */
export function buildProxyServer(opts: ProxyOptions): grpc.Server {
  const server = new grpc.Server({
    // machined holds an apply's network changes until the reply has left (Talos #8566).
    interceptors: opts.machinedTarget ? [replyDeliveryInterceptor(opts.machinedTarget)] : [],
    ...messageSizeOptions,
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

function admit(call: SurfaceCall, m: ProxiedMethod, opts: ProxyOptions): { caller: Caller; route: Route<BackendSession> } | { error: Partial<grpc.StatusObject> } {
  let caller: Caller;
  try {
    caller = opts.authenticate(call);
  } catch (err) {
    return { error: asStatus(err) };
  }
  return { caller, route: routeOf(m.path, call.metadata, opts.backends, opts.isSelf) };
}

function unary(m: ProxiedMethod, opts: ProxyOptions): grpc.handleUnaryCall<Buffer, Buffer> {
  return (call, callback) => {
    const a = admit(call, m, opts);
    if ("error" in a) return callback(asError(a.error));
    if (a.route.kind === "error") return callback(asError(a.route.error));
    const caller = a.caller;
    const cancels = new Set<() => void>();
    call.on("cancelled", () => {
      for (const c of cancels) c();
    });
    const send = (leg: Leg<BackendSession>) => unaryFrameCall(leg.client, callHeaders(m.path, callMetadata(call, caller, leg)), call.request, deadlineOf(call), cancels);
    if (a.route.kind === "one") {
      send(a.route.leg).then((resp) => callback(null, resp), (err) => callback(asError(asStatus(err))));
      return;
    }
    mergedReplies(a.route.legs, send, opts.maxConcurrentTargets ?? 16).then(
      (reply) => callback(null, reply),
      (err) => callback(asError(asStatus(err))),
    );
  };
}

type Downstream = grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>;

/**
 * Relays one backend stream into the caller's stream, pausing the backend while
 * the caller is slow. Ends with the backend's status (undefined = OK) once every
 * message has been passed on (grpc-js's server sends an error status only after
 * the messages written before it).
 */
function relayStream(up: MessageSource, down: Downstream, tag: string | undefined, onDone: (st: grpc.StatusObject | undefined) => void): void {
  const cancel = () => up.cancel();
  up.onMessage((b: Buffer) => {
    if (!down.write(tag === undefined ? b : tagStreamMessage(b, tag))) {
      up.pause();
      down.once("drain", () => up.resume());
    }
  });
  up.whenOver((st) => {
    down.removeListener("cancelled", cancel);
    onDone(st.code === grpc.status.OK ? undefined : asStatus(st));
  });
  down.on("cancelled", cancel);
}

/** Passes a caller's request stream on to the backend, holding the caller back while the backend is slow. */
function relayRequests(down: grpc.ServerReadableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>, up: RequestSink, replies: MessageSource): void {
  down.on("data", (b: Buffer) => {
    if (!up.write(b)) {
      down.pause();
      up.onDrain(() => down.resume());
    }
  });
  down.on("end", () => up.end());
  down.on("cancelled", () => replies.cancel());
}

/** Resolves once a remote session is connected, or rejects after `timeoutMs`: a dead node must not hold a stream fan-out. */
function connected(leg: Leg<BackendSession>, timeoutMs: number): Promise<void> {
  if (!leg.remote) return Promise.resolve();
  return leg.client.ready(timeoutMs).catch((err: unknown) => {
    const details = `connection to ${leg.tag ?? leg.client.name} not ready: ${describeError(err)}`;
    throw asError({ code: grpc.status.UNAVAILABLE, details });
  });
}

function serverStream(m: ProxiedMethod, opts: ProxyOptions): grpc.handleServerStreamingCall<Buffer, Buffer> {
  const connectMs = opts.connectTimeoutMs ?? 10_000;
  return (call) => {
    const a = admit(call, m, opts);
    const fail = (st: Partial<grpc.StatusObject>) => call.emit("error", asError(st));
    if ("error" in a) return fail(a.error);
    if (a.route.kind === "error") return fail(a.route.error);
    const caller = a.caller;
    const open = (leg: Leg<BackendSession>): MessageSource => openFrameStream(leg.client, m.path, callMetadata(call, caller, leg), call.request, deadlineOf(call));
    if (a.route.kind === "one") {
      const leg = a.route.leg;
      relayStream(open(leg), call, undefined, (st) => (st ? fail(st) : call.end()));
      return;
    }
    const legs = a.route.legs;
    let pending = legs.length;
    const legDone = (leg: Leg<BackendSession>, st: grpc.StatusObject | undefined) => {
      // A failing node contributes one error message instead of failing the call.
      if (st && !call.cancelled) call.write(encodeMetadataMessage(failedNode(leg.tag!, st)));
      if (--pending === 0 && !call.cancelled) call.end();
    };
    for (const leg of legs) {
      // A node whose session closed meanwhile (a new identity) fails with UNAVAILABLE: that node fails, apid goes on.
      connected(leg, connectMs)
        .then(() => {
          if (call.cancelled) return legDone(leg, undefined);
          relayStream(open(leg), call, leg.tag, (st) => legDone(leg, st));
        })
        .catch((err: unknown) => legDone(leg, asStatus(err)));
    }
  };
}

function clientStream(m: ProxiedMethod, opts: ProxyOptions): grpc.handleClientStreamingCall<Buffer, Buffer> {
  return (call, callback) => {
    const a = admit(call, m, opts);
    if ("error" in a) return callback(asError(a.error));
    if (a.route.kind !== "one") {
      // Client-streaming calls (EtcdRecover) are proxied one-to-one only.
      return callback(asError(a.route.kind === "error" ? a.route.error : { code: grpc.status.INVALID_ARGUMENT, details: "client streaming methods are proxied one-to-one only" }));
    }
    const leg = a.route.leg;
    const up = openFrameCall(leg.client, callHeaders(m.path, callMetadata(call, a.caller, leg)), deadlineOf(call));
    oneReply(leg.client, up.replies).then((resp) => callback(null, resp), (err: unknown) => callback(asError(asStatus(err))));
    relayRequests(call, up.requests, up.replies);
  };
}

function bidi(m: ProxiedMethod, opts: ProxyOptions): grpc.handleBidiStreamingCall<Buffer, Buffer> {
  return (call) => {
    const a = admit(call, m, opts);
    const fail = (st: Partial<grpc.StatusObject>) => call.emit("error", asError(st));
    if ("error" in a) return fail(a.error);
    if (a.route.kind !== "one") {
      return fail(a.route.kind === "error" ? a.route.error : { code: grpc.status.INVALID_ARGUMENT, details: "bidirectional methods are proxied one-to-one only" });
    }
    const leg = a.route.leg;
    const up = openFrameCall(leg.client, callHeaders(m.path, callMetadata(call, a.caller, leg)), deadlineOf(call));
    relayStream(up.replies, call, undefined, (st) => (st ? fail(st) : call.end()));
    relayRequests(call, up.requests, up.replies);
  };
}
