// cluster.ClusterService/HealthCheck: the server side of `talosctl health`. The nodes
// come from the request's cluster_info when it names any, else from the discovered
// cluster Members, else from the Kubernetes nodes (control planes by their role
// label), as Talos's handler takes them; then "discovered nodes: [...]" and every
// check's progress lines, as Talos streams them. This node alone is read directly;
// a cluster naming other nodes is read through apid, every node with the `nodes`
// (or, for resources, `node`) metadata and the caller's roles, as Talos reads it.

import type * as grpc from "@grpc/grpc-js";
import net from "node:net";
import type { ConfigBundle } from "../../config/bundle.js";
import { KubeClient } from "../../controllers/k8s/kube-client.js";
import { credentialsFromKubeconfig } from "../../controllers/k8s/kubeconfig-credentials.js";
import { ConflictError, InvalidInputError } from "../../errors.js";
import type { Supervisor } from "../../services/supervisor.js";
import { callRoles } from "../access.js";
import { apiNodeReader, type ApiNodeReader } from "../health/api-node.js";
import { hostAddresses, localNodeReader } from "../health/local-node.js";
import { adminKubeconfig } from "./kubeconfig.js";
import { controlPlaneMembers, type EtcdApiContext } from "./etcd.js";
import { MemberType, type MemberSpec } from "../../resources/catalog/cluster.js";
import type { ResourceState } from "../../resources/state.js";
import type { ServiceImpl } from "../../grpc/server.js";
import {
  defaultClusterChecks,
  goQuoted,
  runChecks,
  type CheckContext,
  type ClusterInfo,
  type HealthCheck,
  type KubeReader,
  type NodeInfo,
  type NodeReader,
  type NodeType,
} from "../health/checks.js";

export interface HealthCheckRequest {
  wait_timeout?: { seconds?: number | string; nanos?: number };
  cluster_info?: { control_plane_nodes?: string[]; worker_nodes?: string[]; force_endpoint?: string };
}

export interface HealthDeps {
  state: ResourceState;
  nodes: NodeReader;
  /** A Kubernetes client for the checks (Talos: the admin kubeconfig, or force_endpoint when given). */
  kube: (forceEndpoint: string) => Promise<KubeReader>;
  /** A reader of any node through the API, carrying `roles` (absent: only this node can be read). */
  remoteNodes?: (roles: string[]) => ApiNodeReader;
  /** Whether a node address is this node's (default: the host's interface addresses). */
  isThisNode?: (ip: string) => boolean;
  /** Checks to run (default: Talos's) and a time scale (tests). */
  checks?: HealthCheck[];
  scale?: number;
}

class StaticClusterInfo implements ClusterInfo {
  constructor(private readonly byType: Record<NodeType, NodeInfo[]>) {}
  nodes(): NodeInfo[] {
    return [...this.byType.init, ...this.byType.controlplane, ...this.byType.worker];
  }
  nodesByType(t: NodeType): NodeInfo[] {
    return this.byType[t];
  }
}

function ipsToNodes(ips: string[]): NodeInfo[] {
  return ips.map((ip) => {
    if (net.isIP(ip) === 0) throw new InvalidInputError(`ParseAddr(${JSON.stringify(ip)}): unable to parse IP`, { ip });
    return { internalIP: ip, ips: [ip] };
  });
}

/** The cluster the checks look at (see the module comment). */
export async function clusterInfo(
  req: HealthCheckRequest,
  state: ResourceState,
  kube: () => Promise<KubeReader>,
): Promise<ClusterInfo> {
  const cp = req.cluster_info?.control_plane_nodes ?? [];
  const workers = req.cluster_info?.worker_nodes ?? [];
  if (cp.length > 0 || workers.length > 0)
    return new StaticClusterInfo({ init: [], controlplane: ipsToNodes(cp), worker: ipsToNodes(workers) });
  const byType: Record<NodeType, NodeInfo[]> = { init: [], controlplane: [], worker: [] };
  const members = state.list<MemberSpec>("cluster", MemberType);
  if (members.length > 0) {
    for (const m of members) {
      if (m.spec.addresses.length === 0)
        throw new InvalidInputError(`no IP address found for member: ${m.metadata.id}`);
      if (m.spec.machineType === "unknown") continue;
      byType[m.spec.machineType].push({ internalIP: m.spec.addresses[0]!, ips: m.spec.addresses });
    }
    return new StaticClusterInfo(byType);
  }
  for (const node of await (await kube()).list("/api/v1/nodes")) {
    const meta = (node.metadata ?? {}) as { labels?: Record<string, string> };
    const addresses = (
      (node.status as { addresses?: { type: string; address: string }[] } | undefined)?.addresses ?? []
    ).filter((a) => a.type === "InternalIP" || a.type === "ExternalIP");
    const internal = addresses.filter((a) => a.type === "InternalIP").at(-1)?.address ?? "";
    const info = { internalIP: internal, ips: addresses.map((a) => a.address) };
    byType["node-role.kubernetes.io/control-plane" in (meta.labels ?? {}) ? "controlplane" : "worker"].push(info);
  }
  return new StaticClusterInfo(byType);
}

function timeoutMs(d: HealthCheckRequest["wait_timeout"]): number {
  return Number(d?.seconds ?? 0) * 1000 + Math.floor((d?.nanos ?? 0) / 1e6);
}

/** Streams HealthCheckProgress messages; ends with an error when a check times out. */
export async function streamHealthCheck(
  deps: HealthDeps,
  call: grpc.ServerWritableStream<HealthCheckRequest, unknown>,
): Promise<void> {
  const req = call.request;
  const controller = new AbortController();
  const onCancel = (): void => controller.abort();
  call.on("cancelled", onCancel);
  const timer = setTimeout(() => controller.abort(), timeoutMs(req.wait_timeout) * (deps.scale ?? 1));
  let kube: Promise<KubeReader> | undefined;
  let remote: ApiNodeReader | undefined;
  try {
    const ctx: CheckContext = {
      cluster: undefined as never,
      nodes: deps.nodes,
      // Built once, on the first check that needs it (Talos caches its clientset the same way).
      kube: () => (kube ??= deps.kube(req.cluster_info?.force_endpoint ?? "")),
    };
    ctx.cluster = await clusterInfo(req, deps.state, ctx.kube);
    const isThisNode = deps.isThisNode ?? ((ip: string) => hostAddresses().includes(ip));
    if (deps.remoteNodes && ctx.cluster.nodes().some((n) => !isThisNode(n.internalIP))) {
      remote = deps.remoteNodes(callRoles(call.metadata));
      ctx.nodes = remote;
    }
    call.write({ message: `discovered nodes: ${goQuoted(ctx.cluster.nodes().map((n) => n.internalIP))}` });
    await runChecks(
      ctx,
      deps.checks ?? defaultClusterChecks(),
      (message) => call.write({ message }),
      controller.signal,
      deps.scale ?? 1,
    );
    call.end();
  } finally {
    clearTimeout(timer);
    call.off("cancelled", onCancel);
    remote?.close();
    kube?.then((k) => k.close?.()).catch(() => undefined);
  }
}

/** cluster.ClusterService handlers. */
export function clusterServiceImpl(deps: HealthDeps): ServiceImpl {
  return {
    HealthCheck: async (call: grpc.ServerWritableStream<HealthCheckRequest, unknown>) => streamHealthCheck(deps, call),
  };
}

export interface HealthNodeAccess {
  /** apid's socket, through which a cluster of more nodes is read. */
  apidSocket?: string;
  /** etcd's API context: this node's member list (EtcdMemberList's). */
  etcd?: EtcdApiContext;
}

/** The checks' inputs on a running node: its own resources, services and etcd members, its API server, and apid for the others. */
export function healthDeps(
  state: ResourceState,
  supervisor: Pick<Supervisor, "list">,
  platform: { mode: string },
  activeConfig: () => ConfigBundle | undefined,
  access: HealthNodeAccess = {},
): HealthDeps {
  const { apidSocket, etcd } = access;
  return {
    state,
    ...(apidSocket ? { remoteNodes: (roles: string[]) => apiNodeReader({ socket: apidSocket, roles }) } : {}),
    nodes: localNodeReader({
      state,
      services: () => supervisor.list(),
      platformMode: () => platform.mode,
      ...(etcd
        ? {
            etcdMembers: async () =>
              (await controlPlaneMembers(etcd)).map((m) => ({
                hostname: m.name,
                id: m.id.toString(),
                isLearner: m.isLearner,
                peerUrls: m.peerURLs,
              })),
          }
        : {}),
    }),
    // As Talos's server side: the admin kubeconfig the Kubeconfig RPC gives, its endpoint replaced by force_endpoint.
    kube: async (forceEndpoint) => {
      const config = activeConfig();
      if (!config) throw new ConflictError("kubeconfig can't be generated without a machine configuration");
      return new KubeClient(credentialsFromKubeconfig(await adminKubeconfig(config), forceEndpoint));
    },
  };
}
