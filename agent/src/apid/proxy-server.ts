// apid's grpc-js proxy server: every method of the API registered with identity serializers,
// its calls authenticated, routed by the director and relayed as frames (frame-stream.ts), so
// apid never decodes a request. The front listener sends it the calls it does not relay itself:
// streams, paths the API does not have, compressed requests.

import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import type { SurfaceCall } from "../grpc/server.js";
import { messageSizeOptions } from "../grpc/limits.js";
import { encodeMetadataMessage, tagStreamMessage } from "../grpc/aggregate.js";
import type { BackendSession } from "./backend-session.js";
import {
  asStatus,
  failedNode,
  forwardedMetadata,
  mergedReplies,
  routeOf,
  type Backends,
  type Caller,
  type Leg,
  type Route,
} from "./director.js";
import {
  callHeaders,
  oneReply,
  openFrameCall,
  openFrameStream,
  unaryFrameCall,
  type MessageSource,
  type RequestSink,
} from "./frame-stream.js";
import { replyDeliveryInterceptor } from "./reply-delivery.js";

export interface ProxiedMethod {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
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

const callMetadata = (call: SurfaceCall, caller: Caller, leg: Leg<BackendSession>) =>
  forwardedMetadata(call.metadata, caller, leg.remote, call.getHost());

const asError = (st: Partial<grpc.StatusObject>): grpc.ServiceError =>
  Object.assign(new Error(st.details ?? ""), {
    code: st.code ?? grpc.status.UNKNOWN,
    details: st.details ?? "",
    metadata: st.metadata ?? new grpc.Metadata(),
  });

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

function admit(
  call: SurfaceCall,
  m: ProxiedMethod,
  opts: ProxyOptions,
): { caller: Caller; route: Route<BackendSession> } | { error: Partial<grpc.StatusObject> } {
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
    const send = (leg: Leg<BackendSession>) =>
      unaryFrameCall(
        leg.client,
        callHeaders(m.path, callMetadata(call, caller, leg)),
        call.request,
        deadlineOf(call),
        cancels,
      );
    if (a.route.kind === "one") {
      send(a.route.leg).then(
        (resp) => callback(null, resp),
        (err) => callback(asError(asStatus(err))),
      );
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
function relayStream(
  up: MessageSource,
  down: Downstream,
  tag: string | undefined,
  onDone: (st: grpc.StatusObject | undefined) => void,
): void {
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
function relayRequests(
  down: grpc.ServerReadableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>,
  up: RequestSink,
  replies: MessageSource,
): void {
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
    const open = (leg: Leg<BackendSession>): MessageSource =>
      openFrameStream(leg.client, m.path, callMetadata(call, caller, leg), call.request, deadlineOf(call));
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
      return callback(
        asError(
          a.route.kind === "error"
            ? a.route.error
            : { code: grpc.status.INVALID_ARGUMENT, details: "client streaming methods are proxied one-to-one only" },
        ),
      );
    }
    const leg = a.route.leg;
    const up = openFrameCall(leg.client, callHeaders(m.path, callMetadata(call, a.caller, leg)), deadlineOf(call));
    oneReply(leg.client, up.replies).then(
      (resp) => callback(null, resp),
      (err: unknown) => callback(asError(asStatus(err))),
    );
    relayRequests(call, up.requests, up.replies);
  };
}

function bidi(m: ProxiedMethod, opts: ProxyOptions): grpc.handleBidiStreamingCall<Buffer, Buffer> {
  return (call) => {
    const a = admit(call, m, opts);
    const fail = (st: Partial<grpc.StatusObject>) => call.emit("error", asError(st));
    if ("error" in a) return fail(a.error);
    if (a.route.kind !== "one") {
      return fail(
        a.route.kind === "error"
          ? a.route.error
          : { code: grpc.status.INVALID_ARGUMENT, details: "bidirectional methods are proxied one-to-one only" },
      );
    }
    const leg = a.route.leg;
    const up = openFrameCall(leg.client, callHeaders(m.path, callMetadata(call, a.caller, leg)), deadlineOf(call));
    relayStream(up.replies, call, undefined, (st) => (st ? fail(st) : call.end()));
    relayRequests(call, up.requests, up.replies);
  };
}
