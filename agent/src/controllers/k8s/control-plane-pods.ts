// The static pods of kube-apiserver, kube-controller-manager and kube-scheduler, built
// from their *Config specs exactly as Talos v1.7 renders them: flags, volumes at the
// paths the secrets and config controllers write to, users, probes and resources, in
// the shape Kubernetes's JSON encoding of a v1.Pod has (empty fields left out).

import {
  APIServerId,
  ControllerManagerId,
  SchedulerId,
  type APIServerConfigSpec,
  type ControllerManagerConfigSpec,
  type ExtraVolume,
  type PodResources,
  type SchedulerConfigSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import type { Unstructured } from "../../resources/unstructured.js";
import { Args, type MergePolicy } from "./args-builder.js";
import { formatQuantity, parseQuantity, quantityValue } from "./quantity.js";

const SECRETS_DIR = "/system/secrets/kubernetes";
const CONFIG_DIR = "/system/config/kubernetes";
export const paths = {
  apiServerSecrets: `${SECRETS_DIR}/kube-apiserver`,
  apiServerConfig: `${CONFIG_DIR}/kube-apiserver`,
  auditLog: "/var/log/audit/kube",
  controllerManagerSecrets: `${SECRETS_DIR}/kube-controller-manager`,
  schedulerSecrets: `${SECRETS_DIR}/kube-scheduler`,
  schedulerConfig: `${CONFIG_DIR}/kube-scheduler`,
} as const;

const runAs = {
  [APIServerId]: 65534,
  [ControllerManagerId]: 65535,
  [SchedulerId]: 65536,
} as const;

// scheduling.SystemCriticalPriority in Kubernetes.
const SYSTEM_CRITICAL_PRIORITY = 2000000000;
// GOMEMLIMIT is this share of the memory limit.
const GO_GC_MEM_LIMIT_PERCENT = 95n;

const TLS12_CIPHER_SUITES = [
  "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
  "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
  "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
  "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
  "TLS_RSA_WITH_AES_256_GCM_SHA384",
  "TLS_RSA_WITH_AES_128_GCM_SHA256",
].join(",");

/** The versions a pod's annotations carry, so a change of any of them restarts it. */
export interface PodVersions {
  secrets: string;
  /** The config files' version (kube-apiserver only). */
  configFiles: string;
  /** The *Config resource's version. */
  config: string;
}

const denied = (...keys: string[]): Record<string, MergePolicy> =>
  Object.fromEntries(keys.map((k) => [k, "denied" as const]));
const additive = (...keys: string[]): Record<string, MergePolicy> =>
  Object.fromEntries(keys.map((k) => [k, "additive" as const]));

/** kube-apiserver's flags: Talos's defaults, extraArgs merged under its rules, sorted. */
export function apiServerArgs(cfg: APIServerConfigSpec): string[] {
  const secret = (file: string) => `${paths.apiServerSecrets}/${file}`;
  const admissionPlugins = ["NodeRestriction", ...(cfg.podSecurityPolicyEnabled ? ["PodSecurityPolicy"] : [])];
  const args = new Args({
    "admission-control-config-file": `${paths.apiServerConfig}/admission-control-config.yaml`,
    "allow-privileged": "true",
    // No anonymous requests: they would be put in group system:unauthenticated and see /version etc.
    "anonymous-auth": "false",
    "api-audiences": cfg.controlPlaneEndpoint,
    "authorization-mode": "Node,RBAC",
    "bind-address": "0.0.0.0",
    "client-ca-file": secret("ca.crt"),
    "enable-admission-plugins": admissionPlugins.join(","),
    "requestheader-client-ca-file": secret("aggregator-ca.crt"),
    "requestheader-allowed-names": "front-proxy-client",
    "requestheader-extra-headers-prefix": "X-Remote-Extra-",
    "requestheader-group-headers": "X-Remote-Group",
    "requestheader-username-headers": "X-Remote-User",
    "proxy-client-cert-file": secret("front-proxy-client.crt"),
    "proxy-client-key-file": secret("front-proxy-client.key"),
    "enable-bootstrap-token-auth": "true",
    // TLS 1.2 (not 1.3) for clients outside the cluster.
    "tls-min-version": "VersionTLS12",
    "tls-cipher-suites": TLS12_CIPHER_SUITES,
    "encryption-provider-config": secret("encryptionconfig.yaml"),
    "audit-policy-file": `${paths.apiServerConfig}/auditpolicy.yaml`,
    "audit-log-path": `${paths.auditLog}/kube-apiserver.log`,
    "audit-log-maxage": "30",
    "audit-log-maxbackup": "10",
    "audit-log-maxsize": "100",
    profiling: "false",
    "etcd-cafile": secret("etcd-client-ca.crt"),
    "etcd-certfile": secret("etcd-client.crt"),
    "etcd-keyfile": secret("etcd-client.key"),
    "etcd-servers": cfg.etcdServers.join(","),
    "kubelet-client-certificate": secret("apiserver-kubelet-client.crt"),
    "kubelet-client-key": secret("apiserver-kubelet-client.key"),
    "secure-port": String(cfg.localPort),
    "service-account-issuer": cfg.controlPlaneEndpoint,
    "service-account-key-file": secret("service-account.pub"),
    "service-account-signing-key-file": secret("service-account.key"),
    "service-cluster-ip-range": cfg.serviceCIDRs.join(","),
    "tls-cert-file": secret("apiserver.crt"),
    "tls-private-key-file": secret("apiserver.key"),
    "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
  });
  if (cfg.advertisedAddress !== "") args.set("advertise-address", cfg.advertisedAddress);
  if (cfg.cloudProvider !== "") args.set("cloud-provider", cfg.cloudProvider);
  args.merge(cfg.extraArgs, {
    ...additive("enable-admission-plugins", "feature-gates", "authorization-mode", "tls-cipher-suites"),
    ...denied(
      "etcd-servers",
      "client-ca-file",
      "requestheader-client-ca-file",
      "proxy-client-cert-file",
      "proxy-client-key-file",
      "encryption-provider-config",
      "etcd-cafile",
      "etcd-certfile",
      "etcd-keyfile",
      "kubelet-client-certificate",
      "kubelet-client-key",
      "service-account-key-file",
      "service-account-signing-key-file",
      "tls-cert-file",
      "tls-private-key-file",
    ),
  });
  return args.render();
}

export function apiServerPod(cfg: APIServerConfigSpec, versions: PodVersions): Unstructured {
  // Flags first, as Talos checks them before the resources.
  const command = ["/usr/local/bin/kube-apiserver", ...apiServerArgs(cfg)];
  const resources = podResources(cfg.resources, "200m", "512Mi");
  const podIP = { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } };
  return pod({
    id: APIServerId,
    annotations: {
      "talos.dev/secrets-version": versions.secrets,
      "talos.dev/config-file-version": versions.configFiles,
      "talos.dev/config-version": versions.config,
    },
    image: cfg.image,
    command,
    env: [podIP, ...containerEnv(cfg.environmentVariables, resources)],
    mounts: [
      { name: "secrets", path: paths.apiServerSecrets, readOnly: true },
      { name: "config", path: paths.apiServerConfig, readOnly: true },
      { name: "audit", path: paths.auditLog, readOnly: false },
    ],
    extraVolumes: cfg.extraVolumes,
    resources: resources.json,
    // The kube-apiserver binary carries cap_net_bind_service=+ep, so the capability is needed whatever the port.
    addCapabilities: ["NET_BIND_SERVICE"],
  });
}

/** kube-controller-manager's flags (after --use-service-account-credentials), sorted. */
export function controllerManagerArgs(cfg: ControllerManagerConfigSpec): string[] {
  const secret = (file: string) => `${paths.controllerManagerSecrets}/${file}`;
  const args = new Args({
    "allocate-node-cidrs": "true",
    "bind-address": "127.0.0.1",
    "cluster-cidr": cfg.podCIDRs.join(","),
    "service-cluster-ip-range": cfg.serviceCIDRs.join(","),
    "cluster-signing-cert-file": secret("ca.crt"),
    "cluster-signing-key-file": secret("ca.key"),
    controllers: "*,tokencleaner",
    "configure-cloud-routes": "false",
    kubeconfig: secret("kubeconfig"),
    "authentication-kubeconfig": secret("kubeconfig"),
    "authorization-kubeconfig": secret("kubeconfig"),
    "leader-elect": "true",
    "root-ca-file": secret("ca.crt"),
    "service-account-private-key-file": secret("service-account.key"),
    profiling: "false",
    "tls-min-version": "VersionTLS13",
  });
  if (cfg.cloudProvider !== "") args.set("cloud-provider", cfg.cloudProvider);
  args.merge(cfg.extraArgs, {
    ...additive("service-cluster-ip-range", "controllers"),
    ...denied(
      "cluster-signing-cert-file",
      "cluster-signing-key-file",
      "authentication-kubeconfig",
      "authorization-kubeconfig",
      "root-ca-file",
      "service-account-private-key-file",
    ),
  });
  return args.render();
}

export function controllerManagerPod(cfg: ControllerManagerConfigSpec, versions: PodVersions): Unstructured {
  // Flags first, as Talos checks them before the resources.
  const command = [
    "/usr/local/bin/kube-controller-manager",
    "--use-service-account-credentials",
    ...controllerManagerArgs(cfg),
  ];
  const resources = podResources(cfg.resources, "50m", "256Mi");
  return pod({
    id: ControllerManagerId,
    annotations: { "talos.dev/secrets-version": versions.secrets, "talos.dev/config-version": versions.config },
    image: cfg.image,
    command,
    env: containerEnv(cfg.environmentVariables, resources),
    mounts: [{ name: "secrets", path: paths.controllerManagerSecrets, readOnly: true }],
    extraVolumes: cfg.extraVolumes,
    resources: resources.json,
    healthzPort: 10257,
  });
}

/** kube-scheduler's flags, sorted. */
export function schedulerArgs(cfg: SchedulerConfigSpec): string[] {
  const args = new Args({
    config: `${paths.schedulerConfig}/scheduler-config.yaml`,
    "authentication-tolerate-lookup-failure": "false",
    "authentication-kubeconfig": `${paths.schedulerSecrets}/kubeconfig`,
    "authorization-kubeconfig": `${paths.schedulerSecrets}/kubeconfig`,
    "bind-address": "127.0.0.1",
    "leader-elect": "true",
    profiling: "false",
    "tls-min-version": "VersionTLS13",
  });
  args.merge(cfg.extraArgs, denied("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig", "config"));
  return args.render();
}

export function schedulerPod(cfg: SchedulerConfigSpec, versions: PodVersions): Unstructured {
  // Flags first, as Talos checks them before the resources.
  const command = ["/usr/local/bin/kube-scheduler", ...schedulerArgs(cfg)];
  const resources = podResources(cfg.resources, "10m", "64Mi");
  return pod({
    id: SchedulerId,
    annotations: { "talos.dev/secrets-version": versions.secrets, "talos.dev/config-version": versions.config },
    image: cfg.image,
    command,
    env: containerEnv(cfg.environmentVariables, resources),
    mounts: [
      { name: "secrets", path: paths.schedulerSecrets, readOnly: true },
      { name: "config", path: paths.schedulerConfig, readOnly: true },
    ],
    extraVolumes: cfg.extraVolumes,
    resources: resources.json,
    healthzPort: 10259,
  });
}

interface ResolvedResources {
  json: { limits?: Record<string, string>; requests: Record<string, string> };
  /** The memory limit in bytes, 0 without one. */
  memoryLimit: bigint;
}

/** Requests default to `cpu`/`memory`; each value given replaces its default; limits only as given. */
function podResources(cfg: PodResources, cpu: string, memory: string): ResolvedResources {
  const canonical = (v: string) => formatQuantity(parseQuantity(v));
  const requests: Record<string, string> = {
    cpu: canonical(cfg.requests.cpu || cpu),
    memory: canonical(cfg.requests.memory || memory),
  };
  const limits: Record<string, string> = {};
  if (cfg.limits?.cpu) limits.cpu = canonical(cfg.limits.cpu);
  if (cfg.limits?.memory) limits.memory = canonical(cfg.limits.memory);
  const memoryLimit = cfg.limits?.memory ? quantityValue(parseQuantity(cfg.limits.memory)) : 0n;
  // An empty ResourceList is left out of the JSON.
  return { json: Object.keys(limits).length > 0 ? { limits, requests } : { requests }, memoryLimit };
}

/** The config's variables by name ('$' doubled: Kubernetes expands $(VAR) in values), then GOMEMLIMIT under a memory limit. */
function containerEnv(environment: Record<string, string>, resources: ResolvedResources): Unstructured[] {
  const env: Unstructured[] = Object.keys(environment)
    .sort()
    .map((name) => ({ name, value: environment[name].replaceAll("$", "$$$$") }));
  if (resources.memoryLimit > 0n) {
    env.push({ name: "GOMEMLIMIT", value: String((resources.memoryLimit * GO_GC_MEM_LIMIT_PERCENT) / 100n) });
  }
  return env;
}

interface PodParts {
  id: typeof APIServerId | typeof ControllerManagerId | typeof SchedulerId;
  annotations: Record<string, string>;
  image: string;
  command: string[];
  env: Unstructured[];
  mounts: { name: string; path: string; readOnly: boolean }[];
  extraVolumes: ExtraVolume[];
  resources: Unstructured;
  addCapabilities?: string[];
  /** Where the component serves /healthz over HTTPS (startup and liveness probes); none for kube-apiserver. */
  healthzPort?: number;
}

function pod(p: PodParts): Unstructured {
  // readOnly: false is left out of the JSON.
  const mount = (name: string, mountPath: string, readOnly: boolean) =>
    readOnly ? { name, readOnly, mountPath } : { name, mountPath };
  const mounts = [
    ...p.mounts.map((m) => mount(m.name, m.path, m.readOnly)),
    ...p.extraVolumes.map((v) => mount(v.name, v.mountPath, v.readOnly)),
  ];
  const volumes = [
    ...p.mounts.map((m) => ({ name: m.name, hostPath: { path: m.path } })),
    ...p.extraVolumes.map((v) => ({ name: v.name, hostPath: { path: v.hostPath } })),
  ];
  const healthz =
    p.healthzPort === undefined
      ? undefined
      : { path: "/healthz", port: p.healthzPort, host: "localhost", scheme: "HTTPS" };
  const container: Unstructured = {
    name: p.id,
    image: p.image,
    command: p.command,
    ...(p.env.length > 0 ? { env: p.env } : {}),
    resources: p.resources,
    volumeMounts: mounts,
    ...(healthz ? { livenessProbe: { httpGet: healthz, timeoutSeconds: 15 } } : {}),
    ...(healthz ? { startupProbe: { httpGet: healthz, periodSeconds: 5, failureThreshold: 12 } } : {}),
    securityContext: {
      capabilities: { ...(p.addCapabilities ? { add: p.addCapabilities } : {}), drop: ["ALL"] },
      allowPrivilegeEscalation: false,
      seccompProfile: { type: "RuntimeDefault" },
    },
  };
  return {
    kind: "Pod",
    apiVersion: "v1",
    metadata: {
      name: p.id,
      namespace: "kube-system",
      creationTimestamp: null,
      labels: { tier: "control-plane", "k8s-app": p.id },
      annotations: p.annotations,
    },
    spec: {
      volumes,
      containers: [container],
      hostNetwork: true,
      securityContext: { runAsUser: runAs[p.id], runAsGroup: runAs[p.id], runAsNonRoot: true },
      priorityClassName: "system-cluster-critical",
      priority: SYSTEM_CRITICAL_PRIORITY,
    },
    status: {},
  };
}
