// The health checks' view of any node through the Talos API, as Talos's server-side HealthCheck
// reads every node: a client of this node's apid socket (Talos's LocalClientProvider), calls
// carrying the HealthCheck caller's roles, `nodes` naming one node for MachineService calls (apid
// fans out and tags the reply with the node) and `node` for COSI reads (one-to-one).
import * as grpc from "@grpc/grpc-js";
import { parse as parseYaml } from "yaml";
import { conversionOptions, lookupMessage, rawServiceDefinition } from "../../api/index.js";
import { BasaltError } from "../../errors.js";
import { roleKey } from "../../grpc/metadata.js";
import { MAX_MESSAGE_BYTES } from "../../grpc/limits.js";
import { StaticPodStatusType } from "../../resources/catalog/k8s-controlplane.js";
import {
  MachineStatusId,
  MachineStatusType,
  MountStatusType,
  RUNTIME_NAMESPACE,
} from "../../resources/catalog/runtime.js";
import type { EtcdMemberReport, NodeReader, ServiceReport } from "./checks.js";

/** A node answered a call with an error (apid's per-node `metadata.error`, or a gRPC status). */
export class NodeCallError extends BasaltError {}

export interface ApiNodeReaderOptions {
  /** apid's unix socket. */
  socket: string;
  /** The roles the calls carry (the HealthCheck caller's, as Talos passes them on). */
  roles: readonly string[];
  callTimeoutMs?: number;
}

export interface ApiNodeReader extends NodeReader {
  close(): void;
}

// 64-bit integers as decimal strings: etcd member IDs use all 64 bits.
const decodeOptions = { ...conversionOptions, longs: String };

interface Reply {
  metadata?: { hostname?: string; error?: string } | null;
  [field: string]: unknown;
}

interface WireService {
  id: string;
  events?: { events: { state: string; msg: string }[] } | null;
  health?: { healthy: boolean } | null;
}

interface WireResource {
  spec?: { yaml_spec?: string } | null;
}

export function apiNodeReader(o: ApiNodeReaderOptions): ApiNodeReader {
  const clients = new Map<string, grpc.Client>();
  const client = (service: string): grpc.Client => {
    let c = clients.get(service);
    if (!c) {
      const Ctor = grpc.makeGenericClientConstructor(rawServiceDefinition(service), service);
      c = new Ctor(`unix:${o.socket}`, grpc.credentials.createInsecure(), {
        "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
      });
      clients.set(service, c);
    }
    return c;
  };
  const metadata = (route: "nodes" | "node", node: string): grpc.Metadata => {
    const md = new grpc.Metadata();
    md.set(route, node);
    for (const r of o.roles) md.add(roleKey, r);
    return md;
  };
  /** A unary call; the reply decoded, a gRPC error as NodeCallError naming the node. */
  const unary = (
    service: string,
    method: string,
    reqType: string,
    resType: string,
    req: object,
    route: "nodes" | "node",
    node: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> => {
    const reqT = lookupMessage(reqType);
    const resT = lookupMessage(resType);
    const c = client(service) as unknown as Record<string, (...args: unknown[]) => grpc.ClientUnaryCall>;
    return new Promise((resolve, reject) => {
      const call = c[method]!.call(
        c,
        Buffer.from(reqT.encode(reqT.fromObject(req as Record<string, unknown>)).finish()),
        metadata(route, node),
        { deadline: Date.now() + (o.callTimeoutMs ?? 30_000) },
        (err: grpc.ServiceError | null, res: Buffer) => {
          signal.removeEventListener("abort", abort);
          if (err)
            reject(
              new NodeCallError(
                `${node}: ${err.details || err.message}`,
                { node, method, code: err.code },
                { cause: err },
              ),
            );
          else resolve(resT.toObject(resT.decode(res), decodeOptions));
        },
      );
      const abort = () => call.cancel();
      signal.addEventListener("abort", abort, { once: true });
    });
  };

  /** A MachineService call to one node (`nodes`): that node's message, or its error. */
  const machine = async (
    method: string,
    reqType: string,
    resType: string,
    node: string,
    signal: AbortSignal,
    req: object = {},
  ): Promise<Reply> => {
    const res = await unary("machine.MachineService", method, reqType, resType, req, "nodes", node, signal);
    const message = (res.messages as Reply[] | undefined)?.[0];
    if (!message) throw new NodeCallError(`${node}: no messages returned`, { node, method });
    if (message.metadata?.error) throw new NodeCallError(`${node}: ${message.metadata.error}`, { node, method });
    return message;
  };

  /** A COSI resource's YAML spec on one node (`node`); undefined when it does not exist. */
  const resourceSpec = async (
    node: string,
    namespace: string,
    type: string,
    id: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined> => {
    try {
      const res = await unary(
        "cosi.resource.State",
        "Get",
        "cosi.resource.GetRequest",
        "cosi.resource.GetResponse",
        { namespace, type, id },
        "node",
        node,
        signal,
      );
      return (parseYaml((res.resource as WireResource | null)?.spec?.yaml_spec ?? "") ?? {}) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof NodeCallError && err.fields.code === grpc.status.NOT_FOUND) return undefined;
      throw err;
    }
  };

  return {
    async service(node, id, signal): Promise<ServiceReport | undefined> {
      const msg = await machine("ServiceList", "google.protobuf.Empty", "machine.ServiceListResponse", node, signal);
      const s = (msg.services as WireService[]).find((x) => x.id === id);
      return (
        s && {
          hostname: msg.metadata?.hostname || node,
          events: (s.events?.events ?? []).map((e) => ({ state: e.state, msg: e.msg })),
          healthy: !!s.health?.healthy,
        }
      );
    },
    async etcdMembers(node, signal) {
      const msg = await machine(
        "EtcdMemberList",
        "machine.EtcdMemberListRequest",
        "machine.EtcdMemberListResponse",
        node,
        signal,
      );
      const members = msg.members as { id: string; hostname: string; is_learner: boolean; peer_urls: string[] }[];
      return {
        hostname: msg.metadata?.hostname || node,
        members: members.map(
          (m): EtcdMemberReport => ({ hostname: m.hostname, id: m.id, isLearner: m.is_learner, peerUrls: m.peer_urls }),
        ),
      };
    },
    async platformMode(node, signal) {
      const msg = await machine("Version", "google.protobuf.Empty", "machine.VersionResponse", node, signal);
      return (msg.platform as { mode: string } | null)?.mode ?? "";
    },
    async memoryTotalKiB(node, signal) {
      const msg = await machine("Memory", "google.protobuf.Empty", "machine.MemoryResponse", node, signal);
      return Number((msg.meminfo as { memtotal: string } | null)?.memtotal ?? 0);
    },
    async ephemeral(node, signal) {
      const mount = await resourceSpec(node, RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL", signal);
      if (!mount) return undefined;
      const source = String(mount.source ?? "");
      const msg = await machine("Mounts", "google.protobuf.Empty", "machine.MountsResponse", node, signal);
      const stat = (msg.stats as { filesystem: string; size: string }[]).find((m) => m.filesystem === source);
      return { source, sizeBytes: stat ? Number(stat.size) : undefined };
    },
    async machineStage(node, signal) {
      const status = await resourceSpec(node, RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, signal);
      return String(status?.stage ?? "unknown");
    },
    async staticPodIds(node, signal) {
      const c = client("cosi.resource.State") as unknown as Record<
        string,
        (...args: unknown[]) => grpc.ClientReadableStream<Buffer>
      >;
      const reqT = lookupMessage("cosi.resource.ListRequest");
      const resT = lookupMessage("cosi.resource.ListResponse");
      const stream = c.List!.call(
        c,
        Buffer.from(reqT.encode(reqT.fromObject({ namespace: "k8s", type: StaticPodStatusType })).finish()),
        metadata("node", node),
        {},
      );
      const abort = () => stream.cancel();
      signal.addEventListener("abort", abort, { once: true });
      const ids: string[] = [];
      try {
        for await (const chunk of stream) {
          const res = resT.toObject(resT.decode(chunk as Buffer), decodeOptions) as {
            resource?: { metadata?: { id?: string } } | null;
          };
          if (res.resource?.metadata?.id) ids.push(res.resource.metadata.id);
        }
      } catch (err) {
        const e = err as grpc.ServiceError;
        throw new NodeCallError(
          `${node}: ${e.details || e.message}`,
          { node, method: "List", code: e.code },
          { cause: err },
        );
      } finally {
        signal.removeEventListener("abort", abort);
      }
      return ids;
    },
    close() {
      for (const c of clients.values()) c.close();
      clients.clear();
    },
  };
}
