// The director: which backends serve a call (this node's machined, other nodes' apid), from
// its `proxyfrom`, `node` and `nodes` metadata, what metadata each leg gets, and how a unary
// fan-out's replies are merged into one, as Talos's apid directs and merges them.

import * as grpc from "@grpc/grpc-js";
import { describeError } from "../errors.js";
import { failedNodeReply, tagUnaryReply } from "../grpc/aggregate.js";
import { goCodeName } from "../grpc/call-log.js";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { boundedStatusMessage } from "../grpc/status.js";
import { addressContainsPort } from "../grpc/tls-target.js";
import type { BackendSession } from "./backend-session.js";

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
const dropKeys = new Set([
  "nodes",
  "node",
  "proxyfrom",
  roleKey,
  listenerKey,
  ":authority",
  "content-type",
  "user-agent",
  "te",
  "grpc-timeout",
  "grpc-accept-encoding",
  "accept-encoding",
  "grpc-encoding",
]);

const refused = <C>(code: grpc.status, details: string): Route<C> => ({ kind: "error", error: { code, details } });
// Talos's apid makes no backend for a target naming a port (apid's is always 50000): Internal, with Go's %q of
// the target, which JSON's quoting matches for the ASCII a metadata value holds.
const invalidTarget = <C>(target: string): Route<C> =>
  refused(grpc.status.INTERNAL, `invalid target ${JSON.stringify(target)}`);

function values(md: grpc.Metadata, key: string): string[] {
  // grpc-js joins repeated header values with ", "; a node name never holds a comma.
  return md
    .get(key)
    .flatMap((v) => String(v).split(","))
    .map((s) => s.trim())
    .filter(Boolean);
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
    if (path.startsWith("/cosi."))
      return refused(grpc.status.INVALID_ARGUMENT, "one-2-many proxying is not supported for COSI methods");
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

export function routeOf(
  path: string,
  md: grpc.Metadata,
  backends: Backends,
  isSelf: (t: string) => boolean,
): Route<BackendSession> {
  return route(path, (k) => values(md, k), {
    local: backends.local,
    remote: (t) => backends.remote(t),
    canForward: backends.canForward,
    isSelf,
  });
}

/**
 * Metadata sent to a backend: the caller's `md`, without routing keys, with the caller's roles; to another
 * node's apid `proxyfrom` names the host the caller addressed (its :authority), as Talos's apid does.
 */
export function forwardedMetadata(
  md: grpc.Metadata,
  caller: Caller,
  remote: boolean,
  authority: string | undefined,
): grpc.Metadata {
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

/** A backend failure as the status apid reports (message bounded, so it always fits a trailer). */
export function asStatus(err: unknown): grpc.StatusObject {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code === "number") {
    return {
      code: e.code,
      details: boundedStatusMessage(e.details ?? e.message ?? ""),
      metadata: e.metadata ?? new grpc.Metadata(),
    };
  }
  return {
    code: grpc.status.INTERNAL,
    details: boundedStatusMessage(describeError(err)),
    metadata: new grpc.Metadata(),
  };
}

/** The error entry of a node that failed in a fan-out: `error` as Talos's apid words it (the status error's text), and the status. */
export function failedNode(tag: string, st: Pick<grpc.StatusObject, "code" | "details">) {
  // Talos's apid words a failed node's error as grpc-go prints a status.
  const code = goCodeName(st.code);
  return {
    hostname: tag,
    error: `rpc error: code = ${code} desc = ${st.details}`,
    status: { code: st.code, message: st.details },
  };
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
export async function mergedReplies<C>(
  legs: Leg<C>[],
  send: (leg: Leg<C>) => Promise<Buffer>,
  limit: number,
): Promise<Buffer> {
  const perLeg = legs.map(
    (leg) => () =>
      send(leg).then(
        (resp) => tagUnaryReply(resp, leg.tag!),
        // A failing node contributes an error entry beside the others' answers.
        (err: unknown) => failedNodeReply(failedNode(leg.tag!, asStatus(err))),
      ),
  );
  return Buffer.concat(await bounded(perLeg, limit));
}
