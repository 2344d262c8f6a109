// Namespace `k8s` (and `secrets` for KubeletSecrets): the kubelet's configuration as
// the machine config gives it (KubeletConfig), as the kubelet runs it (KubeletSpec), its
// node name and IPs, and KubePrism, the node-local load balancer in front of the API
// servers. Ids, fields and YAML as Talos v1.7 publishes them (pkg/machinery/resources/k8s).
// Nodenames live in catalog/cluster.ts.

import { netIP, pemYaml } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { emitYaml } from "../go-yaml-emit.js";
import { goUrlYaml, protoStruct } from "./k8s-secrets.js";

export const K8S_NAMESPACE = "k8s";

/** A JSON-shaped object (what Kubernetes calls unstructured), as the kubelet's configuration is held. */
export type Unstructured = Record<string, unknown>;
/** The id of KubeletConfig, KubeletSpec, NodeIPConfig, NodeIP and KubeletSecrets. */
export const KubeletId = "kubelet";

/** An OCI runtime mount (specs.Mount), as kubelet extra mounts carry it. */
export interface Mount {
  destination: string;
  type: string;
  source: string;
  options: string[];
  uidMappings: IdMapping[];
  gidMappings: IdMapping[];
}
export interface IdMapping {
  containerID: number;
  hostID: number;
  size: number;
}

const idMappingProto = (m: IdMapping) => ({ container_id: m.containerID, host_id: m.hostID, size: m.size });
const mountProto = (m: Mount) => ({
  destination: m.destination,
  type: m.type,
  source: m.source,
  options: m.options,
  uid_mappings: m.uidMappings.map(idMappingProto),
  gid_mappings: m.gidMappings.map(idMappingProto),
});
// specs.Mount has no yaml tags: yaml.v3 names its fields in lower case and omits none.
const idMappingYaml = (m: IdMapping) => ({ containerid: m.containerID, hostid: m.hostID, size: m.size });
const mountYaml = (m: Mount) => ({
  destination: m.destination,
  type: m.type,
  source: m.source,
  options: m.options,
  uidmappings: m.uidMappings.map(idMappingYaml),
  gidmappings: m.gidMappings.map(idMappingYaml),
});

/** A map as yaml.v3 marshals Go's map[string]any: keys sorted, at every depth. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [k, sortedKeys(v)]),
  );
}

const nonEmpty = (m: Record<string, unknown> | undefined): boolean => m !== undefined && Object.keys(m).length > 0;

// --- KubeletConfigs.kubernetes.talos.dev (id "kubelet") ---
export const KubeletConfigType = "KubeletConfigs.kubernetes.talos.dev";
export interface KubeletConfigSpec {
  image: string;
  clusterDNS: string[];
  clusterDomain: string;
  extraArgs: Record<string, string>;
  extraMounts: Mount[];
  extraConfig?: Unstructured;
  cloudProviderExternal: boolean;
  defaultRuntimeSeccompEnabled: boolean;
  skipNodeRegistration: boolean;
  staticPodListURL: string;
  disableManifestsDirectory: boolean;
  enableFSQuotaMonitoring: boolean;
  credentialProviderConfig?: Unstructured;
}
export const kubeletConfigDefinition = defineResource<KubeletConfigSpec>({
  type: KubeletConfigType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.KubeletConfigSpec",
  toProto: (s) => ({
    image: s.image,
    cluster_dns: s.clusterDNS,
    cluster_domain: s.clusterDomain,
    extra_args: s.extraArgs,
    extra_mounts: s.extraMounts.map(mountProto),
    extra_config: s.extraConfig ? protoStruct(s.extraConfig) : undefined,
    cloud_provider_external: s.cloudProviderExternal,
    default_runtime_seccomp_enabled: s.defaultRuntimeSeccompEnabled,
    skip_node_registration: s.skipNodeRegistration,
    static_pod_list_url: s.staticPodListURL,
    disable_manifests_directory: s.disableManifestsDirectory,
    enable_fs_quota_monitoring: s.enableFSQuotaMonitoring,
    credential_provider_config: s.credentialProviderConfig ? protoStruct(s.credentialProviderConfig) : undefined,
  }),
  // Mounts hold lists inside list items, which yaml.v3 lays out as emitYaml does.
  toYaml: (s) =>
    emitYaml({
      image: s.image,
      clusterDNS: s.clusterDNS,
      clusterDomain: s.clusterDomain,
      ...(nonEmpty(s.extraArgs) ? { extraArgs: sortedKeys(s.extraArgs) } : {}),
      ...(s.extraMounts.length ? { extraMounts: s.extraMounts.map(mountYaml) } : {}),
      ...(nonEmpty(s.extraConfig) ? { extraConfig: sortedKeys(s.extraConfig) } : {}),
      cloudProviderExternal: s.cloudProviderExternal,
      defaultRuntimeSeccompEnabled: s.defaultRuntimeSeccompEnabled,
      skipNodeRegistration: s.skipNodeRegistration,
      staticPodListURL: s.staticPodListURL,
      disableManifestsDirectory: s.disableManifestsDirectory,
      enableFSQuotaMonitoring: s.enableFSQuotaMonitoring,
      ...(nonEmpty(s.credentialProviderConfig)
        ? { credentialProviderConfig: sortedKeys(s.credentialProviderConfig) }
        : {}),
    }),
});

// --- KubeletSpecs.kubernetes.talos.dev (id "kubelet") ---
export const KubeletSpecType = "KubeletSpecs.kubernetes.talos.dev";
export interface KubeletSpecSpec {
  image: string;
  args: string[];
  extraMounts: Mount[];
  /** "" when the user overrides --hostname-override (Talos then stops checking the node's certificate name). */
  expectedNodename: string;
  /** The KubeletConfiguration object, as Kubernetes' unstructured converter renders it. */
  config: Unstructured;
  credentialProviderConfig?: Unstructured;
}
export const kubeletSpecDefinition = defineResource<KubeletSpecSpec>({
  type: KubeletSpecType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.KubeletSpecSpec",
  toProto: (s) => ({
    image: s.image,
    args: s.args,
    extra_mounts: s.extraMounts.map(mountProto),
    expected_nodename: s.expectedNodename,
    config: protoStruct(s.config),
    credential_provider_config: s.credentialProviderConfig ? protoStruct(s.credentialProviderConfig) : undefined,
  }),
  toYaml: (s) =>
    emitYaml({
      image: s.image,
      ...(s.args.length ? { args: s.args } : {}),
      ...(s.extraMounts.length ? { extraMounts: s.extraMounts.map(mountYaml) } : {}),
      ...(s.expectedNodename ? { expectedNodename: s.expectedNodename } : {}),
      config: sortedKeys(s.config),
      ...(nonEmpty(s.credentialProviderConfig)
        ? { credentialProviderConfig: sortedKeys(s.credentialProviderConfig) }
        : {}),
    }),
});

// --- NodeIPConfigs.kubernetes.talos.dev (id "kubelet") ---
export const NodeIPConfigType = "NodeIPConfigs.kubernetes.talos.dev";
export interface NodeIPConfigSpec {
  validSubnets: string[];
  excludeSubnets: string[];
}
export const nodeIPConfigDefinition = defineResource<NodeIPConfigSpec>({
  type: NodeIPConfigType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.NodeIPConfigSpec",
  toProto: (s) => ({ valid_subnets: s.validSubnets, exclude_subnets: s.excludeSubnets }),
  toYaml: (s) =>
    marshalGoYaml({
      ...(s.validSubnets.length ? { validSubnets: s.validSubnets } : {}),
      excludeSubnets: s.excludeSubnets,
    }),
});

// --- NodeIPs.kubernetes.talos.dev (id "kubelet") ---
export const NodeIPType = "NodeIPs.kubernetes.talos.dev";
export interface NodeIPSpec {
  addresses: string[];
}
export const nodeIPDefinition = defineResource<NodeIPSpec>({
  type: NodeIPType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.NodeIPSpec",
  toProto: (s) => ({ addresses: s.addresses.map(netIP) }),
});

/** One API server KubePrism forwards to. */
export interface KubePrismEndpoint {
  host: string;
  port: number;
}

// --- KubePrismEndpoints.kubernetes.talos.dev (id "k8s-cluster") ---
export const KubePrismEndpointsType = "KubePrismEndpoints.kubernetes.talos.dev";
export const KubePrismEndpointsId = "k8s-cluster";
export interface KubePrismEndpointsSpec {
  endpoints: KubePrismEndpoint[];
}
export const kubePrismEndpointsDefinition = defineResource<KubePrismEndpointsSpec>({
  type: KubePrismEndpointsType,
  defaultNamespace: K8S_NAMESPACE,
  printColumns: [
    { name: "Hosts", jsonPath: "{.endpoints[*].host}" },
    { name: "Ports", jsonPath: "{.endpoints[*].port}" },
  ],
  protoSpecType: "talos.resource.definitions.k8s.KubePrismEndpointsSpec",
  toProto: (s) => ({ endpoints: s.endpoints }),
});

// --- KubePrismConfigs.kubernetes.talos.dev (id "k8s-loadbalancer-config") ---
export const KubePrismConfigType = "KubePrismConfigs.kubernetes.talos.dev";
export const KubePrismConfigId = "k8s-loadbalancer-config";
export interface KubePrismConfigSpec {
  host: string;
  port: number;
  endpoints: KubePrismEndpoint[];
}
export const kubePrismConfigDefinition = defineResource<KubePrismConfigSpec>({
  type: KubePrismConfigType,
  defaultNamespace: K8S_NAMESPACE,
  printColumns: [
    { name: "Host", jsonPath: "{.host}" },
    { name: "Port", jsonPath: "{.port}" },
    { name: "Endpoints", jsonPath: "{.endpoints}" },
  ],
  protoSpecType: "talos.resource.definitions.k8s.KubePrismConfigSpec",
  toProto: (s) => ({ host: s.host, port: s.port, endpoints: s.endpoints }),
});

// --- KubePrismStatuses.kubernetes.talos.dev (id "k8s-loadbalancer") ---
export const KubePrismStatusesType = "KubePrismStatuses.kubernetes.talos.dev";
export const KubePrismStatusesId = "k8s-loadbalancer";
export interface KubePrismStatusesSpec {
  host: string;
  healthy: boolean;
}
export const kubePrismStatusesDefinition = defineResource<KubePrismStatusesSpec>({
  type: KubePrismStatusesType,
  defaultNamespace: K8S_NAMESPACE,
  printColumns: [
    { name: "HOST", jsonPath: "{.host}" },
    { name: "HEALTHY", jsonPath: "{.healthy}" },
  ],
  protoSpecType: "talos.resource.definitions.k8s.KubePrismStatusesSpec",
  toProto: (s) => ({ host: s.host, healthy: s.healthy }),
});

// --- KubeletSecrets.secrets.talos.dev (id "kubelet"): what the kubelet's bootstrap kubeconfig holds ---
export const KubeletSecretsType = "KubeletSecrets.secrets.talos.dev";
export interface KubeletSecretsSpec {
  /** The API server URL the kubelet bootstraps against. */
  endpoint: string;
  /** PEM certificates the kubelet trusts for the API server. */
  acceptedCAs: string[];
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
}
export const kubeletSecretsDefinition = defineResource<KubeletSecretsSpec>({
  type: KubeletSecretsType,
  defaultNamespace: "secrets",
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.KubeletSpec",
  toProto: (s) => ({
    endpoint: { full_path: s.endpoint },
    accepted_c_as: s.acceptedCAs.map((crt) => ({ crt: Buffer.from(crt, "utf8") })),
    bootstrap_token_id: s.bootstrapTokenID,
    bootstrap_token_secret: s.bootstrapTokenSecret,
  }),
  toYaml: (s) =>
    marshalGoYaml({
      endpoint: goUrlYaml(s.endpoint),
      acceptedCAs: s.acceptedCAs.map((crt) => ({ crt: pemYaml(crt) })),
      bootstrapTokenID: s.bootstrapTokenID,
      bootstrapTokenSecret: s.bootstrapTokenSecret,
    }),
});

/** Published by the static pod server (its own catalog); read here by type and id only. */
export const StaticPodServerStatusType = "StaticPodServerStatuses.kubernetes.talos.dev";
export const StaticPodServerStatusId = "static-pod-server-status";
export interface StaticPodServerStatusSpec {
  url: string;
}

export const kubeletDefinitions: readonly ResourceDefinition<never>[] = [
  kubeletConfigDefinition,
  kubeletSpecDefinition,
  nodeIPConfigDefinition,
  nodeIPDefinition,
  kubePrismEndpointsDefinition,
  kubePrismConfigDefinition,
  kubePrismStatusesDefinition,
  kubeletSecretsDefinition,
];
