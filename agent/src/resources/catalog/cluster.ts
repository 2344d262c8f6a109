// Namespaces `cluster`, `etcd`, `k8s`, `hardware`: the commonly queried kinds whose
// producers come later (discovery, etcd, kubelet, SMBIOS). Registered now so
// `talosctl get <kind>` resolves them and lists what exists.

import { autoProto, enumValue, netIP } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";

// --- Members.cluster.talos.dev (id = node id) ---
export const MemberType = "Members.cluster.talos.dev";
export interface MemberSpec {
  nodeId: string;
  addresses: string[];
  hostname: string;
  machineType: "unknown" | "init" | "controlplane" | "worker";
  operatingSystem: string;
  /** Omitted for workers (Go omitempty). */
  controlPlane?: { apiServerPort: number };
}
const memberMachineTypes: Record<string, number> = { unknown: 0, init: 1, controlplane: 2, worker: 3 };
export const memberDefinition = defineResource<MemberSpec>({
  type: MemberType,
  defaultNamespace: "cluster",
  printColumns: [
    { name: "Hostname", jsonPath: "{.hostname}" },
    { name: "Machine Type", jsonPath: "{.machineType}" },
    { name: "OS", jsonPath: "{.operatingSystem}" },
    { name: "Addresses", jsonPath: "{.addresses}" },
  ],
  protoSpecType: "talos.resource.definitions.cluster.MemberSpec",
  toProto: (s) => ({
    node_id: s.nodeId,
    addresses: s.addresses.map(netIP),
    hostname: s.hostname,
    machine_type: enumValue(memberMachineTypes, s.machineType, "machine type"),
    operating_system: s.operatingSystem,
    control_plane: s.controlPlane ? { api_server_port: s.controlPlane.apiServerPort } : undefined,
  }),
});

// --- Infos.cluster.talos.dev (id "current") ---
export const InfoType = "Infos.cluster.talos.dev";
export interface InfoSpec {
  clusterId: string;
  clusterName: string;
}
export const infoDefinition = defineResource<InfoSpec>({
  type: InfoType,
  defaultNamespace: "cluster",
  printColumns: [
    { name: "Cluster ID", jsonPath: "{.clusterId}" },
    { name: "Cluster Name", jsonPath: "{.clusterName}" },
  ],
  protoSpecType: "talos.resource.definitions.cluster.InfoSpec",
  toProto: autoProto("talos.resource.definitions.cluster.InfoSpec"),
});

// --- Identities.cluster.talos.dev (id "local") ---
export const IdentityType = "Identities.cluster.talos.dev";
export interface IdentitySpec {
  nodeId: string;
}
export const identityDefinition = defineResource<IdentitySpec>({
  type: IdentityType,
  defaultNamespace: "cluster",
  printColumns: [{ name: "ID", jsonPath: "{.nodeId}" }],
  protoSpecType: "talos.resource.definitions.cluster.IdentitySpec",
  toProto: autoProto("talos.resource.definitions.cluster.IdentitySpec"),
});

// --- EtcdMembers.etcd.talos.dev (id "local") ---
export const EtcdMemberType = "EtcdMembers.etcd.talos.dev";
export interface EtcdMemberSpec {
  memberID: string;
}
export const etcdMemberDefinition = defineResource<EtcdMemberSpec>({
  type: EtcdMemberType,
  defaultNamespace: "etcd",
  printColumns: [{ name: "Member ID", jsonPath: "{.memberID}" }],
  protoSpecType: "talos.resource.definitions.etcd.MemberSpec",
  toProto: autoProto("talos.resource.definitions.etcd.MemberSpec"),
});

// --- Nodenames.kubernetes.talos.dev (id "nodename") ---
export const NodenameType = "Nodenames.kubernetes.talos.dev";
export interface NodenameSpec {
  nodename: string;
  hostnameVersion: string;
  skipNodeRegistration: boolean;
}
export const nodenameDefinition = defineResource<NodenameSpec>({
  type: NodenameType,
  defaultNamespace: "k8s",
  printColumns: [{ name: "Nodename", jsonPath: "{.nodename}" }],
  protoSpecType: "talos.resource.definitions.k8s.NodenameSpec",
  toProto: autoProto("talos.resource.definitions.k8s.NodenameSpec"),
});

export const clusterDefinitions: readonly ResourceDefinition<never>[] = [
  memberDefinition,
  infoDefinition,
  identityDefinition,
  etcdMemberDefinition,
  nodenameDefinition,
];
