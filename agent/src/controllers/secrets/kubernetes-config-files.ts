// The configuration files the static control-plane pods read, written where Talos writes
// them (/system/config/kubernetes/<component>/), each 0400 and owned by the component's
// user: kube-apiserver's admission control configuration and audit policy, and
// kube-scheduler's configuration; then ConfigStatuses `static-pods`.
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AdmissionControlConfigId,
  AdmissionControlConfigType,
  AuditPolicyConfigId,
  AuditPolicyConfigType,
  CONTROLPLANE_NAMESPACE,
  ConfigStatusType,
  StaticPodConfigStatusId,
  type AdmissionControlConfigSpec,
  type RenderStatusSpec,
  type UnstructuredConfigSpec,
} from "../../resources/catalog/k8s-secrets.js";
import {
  bool,
  duration,
  encodeGo,
  kubeYaml,
  num,
  ptr,
  raw,
  slice,
  str,
  struct,
  type Field,
  type Schema,
} from "./go-struct.js";
import { controlPlaneSecretsDirs, writeComponentFiles, type ComponentFiles } from "./kubernetes-render.js";

// The scheduler's configuration resource (with its image and flags, part of the static pods), by its Talos
// name; only its `config` (cluster.scheduler.config) is read here.
export const SchedulerConfigType = "SchedulerConfigs.kubernetes.talos.dev";
export const SchedulerConfigId = "kube-scheduler";

export const controlPlaneConfigDirs = {
  apiServer: {
    dir: "config/kubernetes/kube-apiserver",
    uid: controlPlaneSecretsDirs.apiServer.uid,
    gid: controlPlaneSecretsDirs.apiServer.gid,
  },
  scheduler: {
    dir: "config/kubernetes/kube-scheduler",
    uid: controlPlaneSecretsDirs.scheduler.uid,
    gid: controlPlaneSecretsDirs.scheduler.gid,
  },
} as const;

/** Where the scheduler's configuration points it for its kubeconfig (below the node's /system). */
export const schedulerKubeconfigPath = "/system/secrets/kubernetes/kube-scheduler/kubeconfig";

const typeMeta: Field[] = [
  ["kind", str, true],
  ["apiVersion", str, true],
];

// audit.k8s.io/v1 Policy.
const groupResources = struct(
  ["group", str, true],
  ["resources", slice(str), true],
  ["resourceNames", slice(str), true],
);
const policyRule = struct(
  ["level", str],
  ["users", slice(str), true],
  ["userGroups", slice(str), true],
  ["verbs", slice(str), true],
  ["resources", slice(groupResources), true],
  ["namespaces", slice(str), true],
  ["nonResourceURLs", slice(str), true],
  ["omitStages", slice(str), true],
  ["omitManagedFields", ptr(bool), true],
);
const auditPolicy = struct(
  ...typeMeta,
  ["metadata", { t: "objectMeta" }, true],
  ["rules", slice(policyRule)],
  ["omitStages", slice(str), true],
  ["omitManagedFields", bool, true],
);

// kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration.
const plugin = struct(["name", str], ["weight", ptr(num), true]);
const pluginSet = struct(["enabled", slice(plugin), true], ["disabled", slice(plugin), true]);
const extensionPoints = [
  "preEnqueue",
  "queueSort",
  "preFilter",
  "filter",
  "postFilter",
  "preScore",
  "score",
  "reserve",
  "permit",
  "preBind",
  "bind",
  "postBind",
  "multiPoint",
];
const plugins = struct(...extensionPoints.map((name): Field => [name, pluginSet, true]));
const profile = struct(
  ["schedulerName", ptr(str), true],
  ["percentageOfNodesToScore", ptr(num), true],
  ["plugins", ptr(plugins), true],
  ["pluginConfig", slice(struct(["name", str], ["args", raw, true])), true],
);
const extender = struct(
  ["urlPrefix", str],
  ["filterVerb", str, true],
  ["preemptVerb", str, true],
  ["prioritizeVerb", str, true],
  ["weight", num, true],
  ["bindVerb", str, true],
  ["enableHTTPS", bool, true],
  [
    "tlsConfig",
    ptr(
      struct(
        ...["insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"].map(
          (n): Field => [n, n === "insecure" ? bool : str, true],
        ),
      ),
    ),
    true,
  ],
  ["httpTimeout", duration, true],
  ["nodeCacheCapable", bool, true],
  ["managedResources", slice(struct(["name", str], ["ignoredByScheduler", bool, true])), true],
  ["ignorable", bool, true],
);
const schedulerConfiguration: Schema = struct(
  ...typeMeta,
  ["parallelism", ptr(num), true],
  [
    "leaderElection",
    struct(
      ["leaderElect", ptr(bool)],
      ["leaseDuration", duration],
      ["renewDeadline", duration],
      ["retryPeriod", duration],
      ["resourceLock", str],
      ["resourceName", str],
      ["resourceNamespace", str],
    ),
  ],
  [
    "clientConnection",
    struct(["kubeconfig", str], ["acceptContentTypes", str], ["contentType", str], ["qps", num], ["burst", num]),
  ],
  ["enableProfiling", ptr(bool), true],
  ["enableContentionProfiling", ptr(bool), true],
  ["percentageOfNodesToScore", ptr(num), true],
  ["podInitialBackoffSeconds", ptr(num), true],
  ["podMaxBackoffSeconds", ptr(num), true],
  ["profiles", slice(profile), true],
  ["extenders", slice(extender), true],
  ["delayCacheUntilActive", bool, true],
);

/** apiserver.config.k8s.io/v1 AdmissionConfiguration: each plugin's configuration embedded as given. */
export function admissionControlConfigYaml(spec: AdmissionControlConfigSpec): string {
  return kubeYaml({
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AdmissionConfiguration",
    plugins: spec.config.map((p) => ({ name: p.name, path: "", configuration: p.configuration ?? null })),
  });
}

/** The audit policy decoded strictly into audit.k8s.io/v1 Policy. */
export function auditPolicyYaml(spec: UnstructuredConfigSpec): string {
  return kubeYaml(encodeGo(auditPolicy, spec.config ?? {}, { strict: true }));
}

/** The scheduler configuration (unknown fields dropped), its type and kubeconfig set as Talos sets them. */
export function schedulerConfigYaml(spec: UnstructuredConfigSpec): string {
  // A struct schema always encodes to a map, and clientConnection (a struct field without omitempty) is always in it.
  const encoded = encodeGo(schedulerConfiguration, spec.config ?? {}, { strict: false }) as Record<
    string,
    Record<string, unknown>
  >;
  encoded["clientConnection"]!["kubeconfig"] = schedulerKubeconfigPath;
  return kubeYaml({ ...encoded, apiVersion: "kubescheduler.config.k8s.io/v1", kind: "KubeSchedulerConfiguration" });
}

export function controlPlaneConfigFiles(
  admission: AdmissionControlConfigSpec,
  audit: UnstructuredConfigSpec,
  scheduler: UnstructuredConfigSpec,
): ComponentFiles[] {
  return [
    {
      ...controlPlaneConfigDirs.apiServer,
      files: [
        { name: "admission-control-config.yaml", contents: admissionControlConfigYaml(admission) },
        { name: "auditpolicy.yaml", contents: auditPolicyYaml(audit) },
      ],
    },
    {
      ...controlPlaneConfigDirs.scheduler,
      files: [{ name: "scheduler-config.yaml", contents: schedulerConfigYaml(scheduler) }],
    },
  ];
}

/**
 * Talos's RenderConfigsStaticPodController: once the admission control, audit policy and
 * scheduler configurations exist, writes their files and reports ConfigStatuses
 * `static-pods` ready with the three inputs' versions.
 */
export class RenderConfigsStaticPodController implements Controller {
  readonly name = "k8s.RenderConfigsStaticPodController";
  readonly inputs = [
    { namespace: CONTROLPLANE_NAMESPACE, type: AdmissionControlConfigType, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: AuditPolicyConfigType, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: SchedulerConfigType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: ConfigStatusType }];

  constructor(private readonly systemDir: string) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const admission = ctx.get<AdmissionControlConfigSpec>(
      CONTROLPLANE_NAMESPACE,
      AdmissionControlConfigType,
      AdmissionControlConfigId,
    );
    const audit = ctx.get<UnstructuredConfigSpec>(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, AuditPolicyConfigId);
    const scheduler = ctx.get<UnstructuredConfigSpec>(CONTROLPLANE_NAMESPACE, SchedulerConfigType, SchedulerConfigId);
    if (!admission || !audit || !scheduler) return;
    await writeComponentFiles(this.systemDir, controlPlaneConfigFiles(admission.spec, audit.spec, scheduler.spec));
    // Talos concatenates the three versions.
    const version = `${admission.metadata.version}${audit.metadata.version}${scheduler.metadata.version}`;
    ctx.modify<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, ConfigStatusType, StaticPodConfigStatusId, () => ({
      ready: true,
      version,
    }));
  }
}
