// The kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1) as Talos v1.7
// renders it into KubeletSpec's `config`: the user's extraConfig read into the Go
// type (unknown fields refused, values normalised), Talos's fixed and default
// settings on top, then written back as Kubernetes' unstructured converter writes
// the type: omitempty fields dropped when zero, struct-typed fields always present
// (every non-pointer duration as "0s", authentication/authorization/logging/memorySwap).

import { durationMs } from "../../config/checks.js";
import { BasaltError } from "../../errors.js";
import type { KubeletConfigSpec } from "../../resources/catalog/k8s-kubelet.js";
import { goDuration } from "../../resources/go-duration.js";
import type { Unstructured } from "../../resources/catalog/k8s-kubelet.js";

/** extraConfig that Talos refuses: a protected field, an unknown field, or a value of the wrong type. */
export class KubeletExtraConfigError extends BasaltError {}

/** Paths and values Talos's constants give the kubelet. */
export const kubeletConstants = {
  configPath: "/etc/kubernetes/kubelet.yaml",
  pkiDir: "/var/lib/kubelet/pki",
  bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubeconfig",
  kubeconfig: "/etc/kubernetes/kubeconfig-kubelet",
  caCert: "/etc/kubernetes/pki/ca.crt",
  manifestsDirectory: "/etc/kubernetes/manifests",
  criAddress: "/run/containerd/containerd.sock",
  podResolvConf: "/system/resolved/resolv.conf",
  credentialProviderBinDir: "/usr/local/lib/kubelet/credentialproviders",
  credentialProviderConfig: "/etc/kubernetes/kubelet-credentialproviderconfig.yaml",
  port: 10250,
  oomScoreAdj: -450,
  cgroupRoot: "/",
  systemCgroup: "/system",
  kubeletCgroup: "/podruntime/kubelet",
  systemReserved: { cpu: "50m", memory: "192Mi", pid: "100", "ephemeral-storage": "256Mi" },
  shutdownGracePeriod: "30s",
  shutdownGracePeriodCriticalPods: "10s",
} as const;

/** Fields extraConfig may not set (Talos's kubelet.ProtectedConfigurationFields). */
export const protectedConfigurationFields = [
  "apiVersion",
  "authentication",
  "authorization",
  "cgroupRoot",
  "kind",
  "kubeletCgroups",
  "port",
  "protectKernelDefaults",
  "resolvConf",
  "rotateCertificates",
  "systemCgroups",
  "staticPodPath",
  "seccompDefault",
] as const;

// How each KubeletConfiguration field converts (its Go type and json tag in k8s.io/kubelet v0.30.3):
// scalars with omitempty vanish when zero, pointers stay when set, metav1.Duration always renders.
type FieldKind =
  | "string"
  | "stringAlways"
  | "bool"
  | "int"
  | "duration"
  | "stringPtr"
  | "boolPtr"
  | "numberPtr"
  | "durationPtr"
  | "objectPtr"
  | "map"
  | "list"
  | "struct";

const fields: Readonly<Record<string, FieldKind>> = {
  enableServer: "boolPtr",
  staticPodPath: "string",
  podLogsDir: "string",
  syncFrequency: "duration",
  fileCheckFrequency: "duration",
  httpCheckFrequency: "duration",
  staticPodURL: "string",
  staticPodURLHeader: "map",
  address: "string",
  port: "int",
  readOnlyPort: "int",
  tlsCertFile: "string",
  tlsPrivateKeyFile: "string",
  tlsCipherSuites: "list",
  tlsMinVersion: "string",
  rotateCertificates: "bool",
  serverTLSBootstrap: "bool",
  authentication: "struct",
  authorization: "struct",
  registryPullQPS: "numberPtr",
  registryBurst: "int",
  eventRecordQPS: "numberPtr",
  eventBurst: "int",
  enableDebuggingHandlers: "boolPtr",
  enableContentionProfiling: "bool",
  healthzPort: "numberPtr",
  healthzBindAddress: "string",
  oomScoreAdj: "numberPtr",
  clusterDomain: "string",
  clusterDNS: "list",
  streamingConnectionIdleTimeout: "duration",
  nodeStatusUpdateFrequency: "duration",
  nodeStatusReportFrequency: "duration",
  nodeLeaseDurationSeconds: "int",
  imageMinimumGCAge: "duration",
  imageMaximumGCAge: "duration",
  imageGCHighThresholdPercent: "numberPtr",
  imageGCLowThresholdPercent: "numberPtr",
  volumeStatsAggPeriod: "duration",
  kubeletCgroups: "string",
  systemCgroups: "string",
  cgroupRoot: "string",
  cgroupsPerQOS: "boolPtr",
  cgroupDriver: "string",
  cpuManagerPolicy: "string",
  cpuManagerPolicyOptions: "map",
  cpuManagerReconcilePeriod: "duration",
  memoryManagerPolicy: "string",
  topologyManagerPolicy: "string",
  topologyManagerScope: "string",
  topologyManagerPolicyOptions: "map",
  qosReserved: "map",
  runtimeRequestTimeout: "duration",
  hairpinMode: "string",
  maxPods: "int",
  podCIDR: "string",
  podPidsLimit: "numberPtr",
  resolvConf: "stringPtr",
  runOnce: "bool",
  cpuCFSQuota: "boolPtr",
  cpuCFSQuotaPeriod: "durationPtr",
  nodeStatusMaxImages: "numberPtr",
  maxOpenFiles: "int",
  contentType: "string",
  kubeAPIQPS: "numberPtr",
  kubeAPIBurst: "int",
  serializeImagePulls: "boolPtr",
  maxParallelImagePulls: "numberPtr",
  evictionHard: "map",
  evictionSoft: "map",
  evictionSoftGracePeriod: "map",
  evictionPressureTransitionPeriod: "duration",
  evictionMaxPodGracePeriod: "int",
  evictionMinimumReclaim: "map",
  podsPerCore: "int",
  enableControllerAttachDetach: "boolPtr",
  protectKernelDefaults: "bool",
  makeIPTablesUtilChains: "boolPtr",
  iptablesMasqueradeBit: "numberPtr",
  iptablesDropBit: "numberPtr",
  featureGates: "map",
  failSwapOn: "boolPtr",
  memorySwap: "struct",
  containerLogMaxSize: "string",
  containerLogMaxFiles: "numberPtr",
  containerLogMaxWorkers: "numberPtr",
  containerLogMonitorInterval: "durationPtr",
  configMapAndSecretChangeDetectionStrategy: "string",
  systemReserved: "map",
  kubeReserved: "map",
  reservedSystemCPUs: "string",
  showHiddenMetricsForVersion: "string",
  systemReservedCgroup: "string",
  kubeReservedCgroup: "string",
  enforceNodeAllocatable: "list",
  allowedUnsafeSysctls: "list",
  volumePluginDir: "string",
  providerID: "string",
  kernelMemcgNotification: "bool",
  logging: "struct",
  enableSystemLogHandler: "boolPtr",
  enableSystemLogQuery: "boolPtr",
  shutdownGracePeriod: "duration",
  shutdownGracePeriodCriticalPods: "duration",
  shutdownGracePeriodByPodPriority: "list",
  reservedMemory: "list",
  enableProfilingHandler: "boolPtr",
  enableDebugFlagsHandler: "boolPtr",
  seccompDefault: "boolPtr",
  memoryThrottlingFactor: "numberPtr",
  registerWithTaints: "list",
  registerNode: "boolPtr",
  tracing: "objectPtr",
  localStorageCapacityIsolation: "boolPtr",
  containerRuntimeEndpoint: "stringAlways",
  imageServiceEndpoint: "string",
};

const isObject = (v: unknown): v is Unstructured => v !== null && typeof v === "object" && !Array.isArray(v);

/** metav1.Duration: parsed by Go's time.ParseDuration, written back by Duration.String(). */
function normalizeDuration(field: string, v: unknown): string {
  const ms = typeof v === "string" ? durationMs(v) : undefined;
  if (ms === undefined)
    throw new KubeletExtraConfigError(`extraConfig field "${field}": invalid duration ${JSON.stringify(v)}`, { field });
  return goDuration(ms);
}

function checkType(field: string, v: unknown, ok: boolean, want: string): void {
  if (!ok)
    throw new KubeletExtraConfigError(`extraConfig field "${field}": expected ${want}, got ${JSON.stringify(v)}`, {
      field,
    });
}

function checkObject(field: string, v: unknown): Unstructured {
  if (!isObject(v))
    throw new KubeletExtraConfigError(`extraConfig field "${field}": expected an object, got ${JSON.stringify(v)}`, {
      field,
    });
  return v;
}

/** One extraConfig value as the Go type holds it; undefined: the converter would drop it. */
function normalizeField(field: string, kind: FieldKind, v: unknown): unknown {
  if (v === null || v === undefined) return undefined;
  switch (kind) {
    case "string":
    case "stringAlways":
    case "stringPtr":
      checkType(field, v, typeof v === "string", "a string");
      return v === "" && kind === "string" ? undefined : v;
    case "bool":
    case "boolPtr":
      checkType(field, v, typeof v === "boolean", "a boolean");
      return v === false && kind === "bool" ? undefined : v;
    case "int":
    case "numberPtr":
      checkType(field, v, typeof v === "number", "a number");
      return v === 0 && kind === "int" ? undefined : v;
    case "duration":
    case "durationPtr":
      return normalizeDuration(field, v);
    case "map":
      return Object.keys(checkObject(field, v)).length ? v : undefined;
    case "list":
      checkType(field, v, Array.isArray(v), "a list");
      return Array.isArray(v) && v.length ? v : undefined;
    case "objectPtr":
    case "struct":
      return checkObject(field, v);
  }
}

// The fields of the struct-typed fields extraConfig may set (a list's items for list fields).
type Shape = { [field: string]: Shape | true };
const routing: Shape = { splitStream: true, infoBufferSize: true };
const nested: Readonly<Record<string, Shape>> = {
  logging: {
    format: true,
    flushFrequency: true,
    verbosity: true,
    vmodule: true,
    options: { text: routing, json: routing },
  },
  memorySwap: { swapBehavior: true },
  tracing: { endpoint: true, samplingRatePerMillion: true },
  shutdownGracePeriodByPodPriority: { priority: true, shutdownGracePeriodSeconds: true },
  reservedMemory: { numaNode: true, limits: true },
  registerWithTaints: { key: true, value: true, effect: true, timeAdded: true },
};

/** Paths of fields under `value` that `shape` does not have, as the strict decoder names them. */
function unknownPaths(value: unknown, shape: Shape, at: string): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => unknownPaths(item, shape, `${at}[${i}]`));
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const sub = shape[k];
    if (sub === undefined) return [`${at}.${k}`];
    return sub === true ? [] : unknownPaths(v, sub, `${at}.${k}`);
  });
}

/** Refuses protected and unknown fields (Talos: every protected one listed, then the strict decode). */
function checkExtraConfig(extra: Unstructured): void {
  const denied = protectedConfigurationFields.filter((f) => f in extra);
  if (denied.length) {
    throw new KubeletExtraConfigError(denied.map((f) => `field "${f}" can't be overridden`).join("; "), {
      fields: denied,
    });
  }
  const unknown = Object.entries(extra)
    .flatMap(([f, v]) => (!(f in fields) ? [f] : nested[f] ? unknownPaths(v, nested[f]!, f) : []))
    .sort();
  if (unknown.length) {
    const errors = unknown.map((f) => `unknown field "${f}"`).join(", ");
    throw new KubeletExtraConfigError(
      `error unmarshalling extra kubelet configuration: strict decoding error: ${errors}`,
      { fields: unknown },
    );
  }
}

/** logsapi.LoggingConfiguration as the converter writes it: flushFrequency, verbosity and both format options always. */
function loggingObject(extra: unknown): Unstructured {
  const given = isObject(extra) ? extra : {};
  const options = isObject(given.options) ? given.options : {};
  const routing = (o: unknown): Unstructured => {
    const r = isObject(o) ? o : {};
    return {
      ...(r.splitStream === true ? { splitStream: true } : {}),
      infoBufferSize: typeof r.infoBufferSize === "string" ? r.infoBufferSize : "0",
    };
  };
  // TimeOrMetaDuration keeps the spelling it was given: a number stays nanoseconds, a string a duration.
  const flush = given.flushFrequency;
  return {
    ...(typeof given.format === "string" && given.format !== "" ? { format: given.format } : {}),
    flushFrequency:
      typeof flush === "string"
        ? normalizeDuration("logging.flushFrequency", flush)
        : typeof flush === "number"
          ? flush
          : 0,
    verbosity: typeof given.verbosity === "number" ? given.verbosity : 0,
    ...(Array.isArray(given.vmodule) && given.vmodule.length ? { vmodule: given.vmodule } : {}),
    options: { text: routing(options.text), json: routing(options.json) },
  };
}

/** The user's extraConfig as the Go type holds it, struct fields filled as the converter fills them. */
function fromExtraConfig(extra: Unstructured): Unstructured {
  checkExtraConfig(extra);
  const out: Unstructured = {};
  for (const [field, kind] of Object.entries(fields)) {
    if (kind === "duration") out[field] = "0s";
    if (kind === "stringAlways") out[field] = "";
    const v = normalizeField(field, kind, extra[field]);
    if (v !== undefined) out[field] = v;
  }
  out.memorySwap =
    isObject(extra.memorySwap) &&
    typeof extra.memorySwap.swapBehavior === "string" &&
    extra.memorySwap.swapBehavior !== ""
      ? { swapBehavior: extra.memorySwap.swapBehavior }
      : {};
  out.logging = loggingObject(extra.logging);
  return out;
}

/** Whether the kubelet of this image reads containerRuntimeEndpoint from its config (v1.27 and later; unknown tags count as latest). */
export function supportsConfigContainerRuntimeEndpoint(image: string): boolean {
  const ref = image.split("@")[0]!;
  const colon = ref.lastIndexOf(":");
  const tag = colon > ref.lastIndexOf("/") ? ref.slice(colon + 1) : "";
  const m = /^v?(\d+)(?:\.(\d+))?/.exec(tag);
  if (!m) return true;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? 0);
  return major > 1 || (major === 1 && minor >= 27);
}

/** KubeletSpec's `config`: Talos's NewKubeletConfiguration for this KubeletConfig. */
export function renderKubeletConfiguration(cfg: KubeletConfigSpec, opts: { container?: boolean } = {}): Unstructured {
  const extra = cfg.extraConfig ?? {};
  const c = fromExtraConfig(extra);
  const k = kubeletConstants;

  c.apiVersion = "kubelet.config.k8s.io/v1beta1";
  c.kind = "KubeletConfiguration";
  if (cfg.disableManifestsDirectory) delete c.staticPodPath;
  else c.staticPodPath = k.manifestsDirectory;
  if (cfg.staticPodListURL) c.staticPodURL = cfg.staticPodListURL;
  else delete c.staticPodURL;
  c.port = k.port;
  c.authentication = {
    x509: { clientCAFile: k.caCert },
    webhook: { enabled: !cfg.skipNodeRegistration, cacheTTL: "0s" },
    anonymous: { enabled: false },
  };
  c.authorization = {
    mode: cfg.skipNodeRegistration ? "AlwaysAllow" : "Webhook",
    webhook: { cacheAuthorizedTTL: "0s", cacheUnauthorizedTTL: "0s" },
  };
  c.cgroupRoot = k.cgroupRoot;
  c.systemCgroups = k.systemCgroup;
  c.kubeletCgroups = k.kubeletCgroup;
  c.rotateCertificates = true;
  // In a container the kernel's parameters are the host's: the kubelet must not insist on them.
  if (opts.container) delete c.protectKernelDefaults;
  else c.protectKernelDefaults = true;
  if (supportsConfigContainerRuntimeEndpoint(cfg.image)) c.containerRuntimeEndpoint = `unix://${k.criAddress}`;
  if (cfg.defaultRuntimeSeccompEnabled) c.seccompDefault = true;
  if (cfg.enableFSQuotaMonitoring) {
    const gates = isObject(c.featureGates) ? c.featureGates : {};
    if (!("LocalStorageCapacityIsolationFSQuotaMonitoring" in gates))
      c.featureGates = { ...gates, LocalStorageCapacityIsolationFSQuotaMonitoring: true };
  }

  c.address ??= "0.0.0.0";
  c.oomScoreAdj ??= k.oomScoreAdj;
  if (c.clusterDomain === undefined && cfg.clusterDomain) c.clusterDomain = cfg.clusterDomain;
  if (c.clusterDNS === undefined && cfg.clusterDNS.length) c.clusterDNS = [...cfg.clusterDNS];
  c.serializeImagePulls ??= false;
  c.failSwapOn ??= false;
  c.systemReserved ??= { ...k.systemReserved };
  if (isObject(c.logging) && c.logging.format === undefined) c.logging = { format: "json", ...c.logging };
  if (!("shutdownGracePeriod" in extra) && c.shutdownGracePeriod === "0s")
    c.shutdownGracePeriod = k.shutdownGracePeriod;
  if (!("shutdownGracePeriodCriticalPods" in extra) && c.shutdownGracePeriodCriticalPods === "0s")
    c.shutdownGracePeriodCriticalPods = k.shutdownGracePeriodCriticalPods;
  if (c.streamingConnectionIdleTimeout === "0s") c.streamingConnectionIdleTimeout = "5m0s";
  c.tlsMinVersion ??= "VersionTLS13";
  c.resolvConf = k.podResolvConf;
  return c;
}
