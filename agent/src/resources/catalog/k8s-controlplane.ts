// The static control plane: what the machine config asks of kube-apiserver,
// kube-controller-manager and kube-scheduler (namespace `controlplane`; the admission
// control and audit policy configs live with the files rendered from them, k8s-secrets.ts), the static
// pods rendered from it, the URL the kubelet reads them from and the pods' status as
// the kubelet reports it (namespace `k8s`). Ids, fields and YAML as Talos v1.7 has them.

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { goYamlOrdered, unstructuredProto, type Unstructured } from "../unstructured.js";
import { CONTROLPLANE_NAMESPACE } from "./k8s-secrets.js";

export const K8S_NAMESPACE = "k8s";

export const APIServerId = "kube-apiserver";
export const ControllerManagerId = "kube-controller-manager";
export const SchedulerId = "kube-scheduler";

export interface ExtraVolume {
  name: string;
  hostPath: string;
  mountPath: string;
  readOnly: boolean;
}

/** Requests and limits as the config gives them (`cpu`, `memory`); limits absent when none is set. */
export interface PodResources {
  requests: Record<string, string>;
  limits?: Record<string, string>;
}

const sorted = (m: Record<string, string> | undefined): Record<string, string> => goYamlOrdered(m ?? {});
const volumeProto = (v: ExtraVolume) => ({
  name: v.name,
  host_path: v.hostPath,
  mount_path: v.mountPath,
  read_only: v.readOnly,
});
const volumeYaml = (v: ExtraVolume) => ({
  name: v.name,
  hostPath: v.hostPath,
  mountPath: v.mountPath,
  readonly: v.readOnly,
});
const resourcesProto = (r: PodResources) => ({ requests: r.requests, limits: r.limits ?? {} });
const resourcesYaml = (r: PodResources) => ({ requests: sorted(r.requests), limits: sorted(r.limits) });

// --- APIServerConfigs.kubernetes.talos.dev (id "kube-apiserver") ---
export const APIServerConfigType = "APIServerConfigs.kubernetes.talos.dev";
export interface APIServerConfigSpec {
  image: string;
  cloudProvider: string;
  controlPlaneEndpoint: string;
  etcdServers: string[];
  localPort: number;
  serviceCIDRs: string[];
  extraArgs: Record<string, string>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  podSecurityPolicyEnabled: boolean;
  advertisedAddress: string;
  resources: PodResources;
}
export const apiServerConfigDefinition = defineResource<APIServerConfigSpec>({
  type: APIServerConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.APIServerConfigSpec",
  toProto: (s) => ({
    image: s.image,
    cloud_provider: s.cloudProvider,
    control_plane_endpoint: s.controlPlaneEndpoint,
    etcd_servers: s.etcdServers,
    local_port: s.localPort,
    service_cid_rs: s.serviceCIDRs,
    extra_args: s.extraArgs,
    extra_volumes: s.extraVolumes.map(volumeProto),
    environment_variables: s.environmentVariables,
    pod_security_policy_enabled: s.podSecurityPolicyEnabled,
    advertised_address: s.advertisedAddress,
    resources: resourcesProto(s.resources),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      image: s.image,
      cloudProvider: s.cloudProvider,
      controlPlaneEndpoint: s.controlPlaneEndpoint,
      etcdServers: s.etcdServers,
      localPort: s.localPort,
      serviceCIDR: s.serviceCIDRs,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: s.extraVolumes.map(volumeYaml),
      environmentVariables: sorted(s.environmentVariables),
      podSecurityPolicyEnabled: s.podSecurityPolicyEnabled,
      advertisedAddress: s.advertisedAddress,
      resources: resourcesYaml(s.resources),
    }),
});

// --- ControllerManagerConfigs.kubernetes.talos.dev (id "kube-controller-manager") ---
export const ControllerManagerConfigType = "ControllerManagerConfigs.kubernetes.talos.dev";
export interface ControllerManagerConfigSpec {
  enabled: boolean;
  image: string;
  cloudProvider: string;
  podCIDRs: string[];
  serviceCIDRs: string[];
  extraArgs: Record<string, string>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  resources: PodResources;
}
export const controllerManagerConfigDefinition = defineResource<ControllerManagerConfigSpec>({
  type: ControllerManagerConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.ControllerManagerConfigSpec",
  toProto: (s) => ({
    enabled: s.enabled,
    image: s.image,
    cloud_provider: s.cloudProvider,
    pod_cid_rs: s.podCIDRs,
    service_cid_rs: s.serviceCIDRs,
    extra_args: s.extraArgs,
    extra_volumes: s.extraVolumes.map(volumeProto),
    environment_variables: s.environmentVariables,
    resources: resourcesProto(s.resources),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      enabled: s.enabled,
      image: s.image,
      cloudProvider: s.cloudProvider,
      podCIDRs: s.podCIDRs,
      serviceCIDRs: s.serviceCIDRs,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: s.extraVolumes.map(volumeYaml),
      environmentVariables: sorted(s.environmentVariables),
      resources: resourcesYaml(s.resources),
    }),
});

// --- SchedulerConfigs.kubernetes.talos.dev (id "kube-scheduler") ---
export const SchedulerConfigType = "SchedulerConfigs.kubernetes.talos.dev";
export interface SchedulerConfigSpec {
  enabled: boolean;
  image: string;
  extraArgs: Record<string, string>;
  extraVolumes: ExtraVolume[];
  environmentVariables: Record<string, string>;
  resources: PodResources;
  /** `.cluster.scheduler.config` (a KubeSchedulerConfiguration), absent when not given. */
  config?: Unstructured;
}
export const schedulerConfigDefinition = defineResource<SchedulerConfigSpec>({
  type: SchedulerConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.SchedulerConfigSpec",
  toProto: (s) => ({
    enabled: s.enabled,
    image: s.image,
    extra_args: s.extraArgs,
    extra_volumes: s.extraVolumes.map(volumeProto),
    environment_variables: s.environmentVariables,
    resources: resourcesProto(s.resources),
    config: s.config ? unstructuredProto(s.config) : undefined,
  }),
  toYaml: (s) =>
    marshalGoYaml({
      enabled: s.enabled,
      image: s.image,
      extraArgs: sorted(s.extraArgs),
      extraVolumes: s.extraVolumes.map(volumeYaml),
      environmentVariables: sorted(s.environmentVariables),
      resources: resourcesYaml(s.resources),
      config: goYamlOrdered(s.config ?? {}),
    }),
});

// --- ExtraManifestsConfigs.kubernetes.talos.dev (id "extra-manifests") ---
export const ExtraManifestsConfigType = "ExtraManifestsConfigs.kubernetes.talos.dev";
export const ExtraManifestsConfigId = "extra-manifests";
export interface ExtraManifest {
  name: string;
  url: string;
  priority: string;
  extraHeaders?: Record<string, string>;
  inlineManifest: string;
}
export interface ExtraManifestsConfigSpec {
  extraManifests: ExtraManifest[];
}
export const extraManifestsConfigDefinition = defineResource<ExtraManifestsConfigSpec>({
  type: ExtraManifestsConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.ExtraManifestsConfigSpec",
  toProto: (s) => ({
    extra_manifests: s.extraManifests.map((m) => ({
      name: m.name,
      url: m.url,
      priority: m.priority,
      extra_headers: m.extraHeaders ?? {},
      inline_manifest: m.inlineManifest,
    })),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      extraManifests: s.extraManifests.map((m) => ({
        name: m.name,
        url: m.url,
        priority: m.priority,
        extraHeaders: sorted(m.extraHeaders),
        inlineManifest: m.inlineManifest,
      })),
    }),
});

// --- BootstrapManifestsConfigs.kubernetes.talos.dev (id "manifests") ---
export const BootstrapManifestsConfigType = "BootstrapManifestsConfigs.kubernetes.talos.dev";
export const BootstrapManifestsConfigId = "manifests";
export interface BootstrapManifestsConfigSpec {
  server: string;
  clusterDomain: string;
  podCIDRs: string[];
  proxyEnabled: boolean;
  proxyImage: string;
  proxyArgs: string[];
  coreDNSEnabled: boolean;
  coreDNSImage: string;
  dnsServiceIP: string;
  dnsServiceIPv6: string;
  flannelEnabled: boolean;
  flannelImage: string;
  flannelCNIImage: string;
  flannelExtraArgs: string[];
  flannelKubeServiceHost: string;
  flannelKubeServicePort: string;
  podSecurityPolicyEnabled: boolean;
  talosAPIServiceEnabled: boolean;
  serviceHostDNSAddress: string;
}
export const bootstrapManifestsConfigDefinition = defineResource<BootstrapManifestsConfigSpec>({
  type: BootstrapManifestsConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.BootstrapManifestsConfigSpec",
  // The published message stops at field 16: the flannel service host/port and the host DNS address are YAML only.
  toProto: (s) => ({
    server: s.server,
    cluster_domain: s.clusterDomain,
    pod_cid_rs: s.podCIDRs,
    proxy_enabled: s.proxyEnabled,
    proxy_image: s.proxyImage,
    proxy_args: s.proxyArgs,
    core_dns_enabled: s.coreDNSEnabled,
    core_dns_image: s.coreDNSImage,
    dns_service_ip: s.dnsServiceIP,
    dns_service_i_pv6: s.dnsServiceIPv6,
    flannel_enabled: s.flannelEnabled,
    flannel_image: s.flannelImage,
    flannel_cni_image: s.flannelCNIImage,
    pod_security_policy_enabled: s.podSecurityPolicyEnabled,
    talos_api_service_enabled: s.talosAPIServiceEnabled,
    flannel_extra_args: s.flannelExtraArgs,
  }),
  toYaml: (s) =>
    marshalGoYaml({
      // Talos's YAML tag for the server is "string".
      string: s.server,
      clusterDomain: s.clusterDomain,
      podCIDRs: s.podCIDRs,
      proxyEnabled: s.proxyEnabled,
      proxyImage: s.proxyImage,
      proxyArgs: s.proxyArgs,
      coreDNSEnabled: s.coreDNSEnabled,
      coreDNSImage: s.coreDNSImage,
      dnsServiceIP: s.dnsServiceIP,
      dnsServiceIPv6: s.dnsServiceIPv6,
      flannelEnabled: s.flannelEnabled,
      flannelImage: s.flannelImage,
      flannelCNIImage: s.flannelCNIImage,
      flannelExtraArgs: s.flannelExtraArgs,
      flannelKubeServiceHost: s.flannelKubeServiceHost,
      flannelKubeServicePort: s.flannelKubeServicePort,
      podSecurityPolicyEnabled: s.podSecurityPolicyEnabled,
      talosAPIServiceEnabled: s.talosAPIServiceEnabled,
      serviceHostDNSAddress: s.serviceHostDNSAddress,
    }),
});

// --- StaticPods.kubernetes.talos.dev (ids "kube-apiserver", ..., "<namespace>-<name>" for machine.pods) ---
export const StaticPodType = "StaticPods.kubernetes.talos.dev";
export interface StaticPodSpec {
  /** The v1 Pod as Kubernetes's JSON encoding has it. */
  pod: Unstructured;
}
export const staticPodDefinition = defineResource<StaticPodSpec>({
  type: StaticPodType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.StaticPodSpec",
  toProto: (s) => ({ pod: unstructuredProto(s.pod) }),
  // Talos's YAML of a static pod is the pod itself.
  toYaml: (s) => marshalGoYaml(goYamlOrdered(s.pod)),
});

// --- StaticPodStatuses.kubernetes.talos.dev (ids "<namespace>/<pod name>") ---
export const StaticPodStatusType = "StaticPodStatuses.kubernetes.talos.dev";
export interface StaticPodStatusSpec {
  /** The v1 PodStatus the kubelet reports. */
  podStatus: Unstructured;
}
export const staticPodStatusDefinition = defineResource<StaticPodStatusSpec>({
  type: StaticPodStatusType,
  defaultNamespace: K8S_NAMESPACE,
  aliases: ["podstatus"],
  printColumns: [{ name: "Ready", jsonPath: '{.conditions[?(@.type=="Ready")].status}' }],
  protoSpecType: "talos.resource.definitions.k8s.StaticPodStatusSpec",
  toProto: (s) => ({ pod_status: unstructuredProto(s.podStatus) }),
  toYaml: (s) => marshalGoYaml(goYamlOrdered(s.podStatus)),
});

// --- StaticPodServerStatuses.kubernetes.talos.dev (id "static-pod-server-status") ---
export const StaticPodServerStatusType = "StaticPodServerStatuses.kubernetes.talos.dev";
export const StaticPodServerStatusId = "static-pod-server-status";
export interface StaticPodServerStatusSpec {
  url: string;
}
export const staticPodServerStatusDefinition = defineResource<StaticPodServerStatusSpec>({
  type: StaticPodServerStatusType,
  defaultNamespace: K8S_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.StaticPodServerStatusSpec",
  toProto: (s) => ({ url: s.url }),
});

export const controlPlaneDefinitions: readonly ResourceDefinition<never>[] = [
  apiServerConfigDefinition,
  controllerManagerConfigDefinition,
  schedulerConfigDefinition,
  extraManifestsConfigDefinition,
  bootstrapManifestsConfigDefinition,
  staticPodDefinition,
  staticPodStatusDefinition,
  staticPodServerStatusDefinition,
];
