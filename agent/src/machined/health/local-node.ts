// The health checks' view of this node: its services, resources, memory and mounts.
// A cluster of more nodes is read through apid (api-node.ts); this reader refuses
// any other node as unreachable.

import os from "node:os";
import { BasaltError } from "../../errors.js";
import {
  MachineStatusId,
  MachineStatusType,
  MountStatusType,
  RUNTIME_NAMESPACE,
  type MachineStatusSpec,
  type MountStatusSpec,
} from "../../resources/catalog/runtime.js";
import type { ResourceState } from "../../resources/state.js";
import type { ServiceStatus } from "../../services/service.js";
import { mountStats } from "../rpc/mounts.js";
import { memory } from "../rpc/monitoring.js";
import type { EtcdMemberReport, NodeReader, ServiceReport } from "./checks.js";

/** A check asked a node this one cannot read. */
export class NodeUnreachableError extends BasaltError {}

export interface LocalNodeDeps {
  state: ResourceState;
  services: () => ServiceStatus[];
  platformMode: () => string;
  /** etcd's member list (the etcd client); absent: the etcd member checks report it. */
  etcdMembers?: (signal: AbortSignal) => Promise<EtcdMemberReport[]>;
  /** This node's addresses (default: the host's interface addresses). */
  addresses?: () => string[];
}

/** The host's interface addresses. */
export function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
}

export function localNodeReader(deps: LocalNodeDeps): NodeReader {
  const addresses = deps.addresses ?? hostAddresses;
  const local = (node: string): void => {
    if (!addresses().includes(node))
      throw new NodeUnreachableError(`node ${node}: not this node, and this node's health check reads only its own`, {
        node,
      });
  };
  return {
    async service(node, id): Promise<ServiceReport | undefined> {
      local(node);
      const s = deps.services().find((x) => x.id === id);
      return (
        s && {
          hostname: node,
          events: s.events.map((e) => ({ state: e.state, msg: e.msg })),
          healthy: s.health.healthy,
        }
      );
    },
    async etcdMembers(node, signal) {
      local(node);
      if (!deps.etcdMembers) throw new NodeUnreachableError("etcd member list is not available on this node");
      return { hostname: node, members: await deps.etcdMembers(signal) };
    },
    async platformMode(node) {
      local(node);
      return deps.platformMode();
    },
    async memoryTotalKiB(node) {
      local(node);
      return Number((await memory()).messages[0]?.meminfo.memtotal ?? 0);
    },
    async ephemeral(node) {
      local(node);
      const mount = deps.state.get<MountStatusSpec>(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL")?.spec;
      if (!mount) return undefined;
      const stat = (await mountStats()).messages[0]?.stats.find((m) => m.filesystem === mount.source);
      return { source: mount.source, sizeBytes: stat?.size };
    },
    async machineStage(node) {
      local(node);
      return (
        deps.state.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)?.spec.stage ??
        "unknown"
      );
    },
    async staticPodIds(node) {
      local(node);
      return deps.state.list("k8s", "StaticPodStatuses.kubernetes.talos.dev").map((r) => r.metadata.id);
    },
  };
}
