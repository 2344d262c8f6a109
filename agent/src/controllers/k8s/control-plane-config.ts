// The control plane's *Config resources from the machine config of a control plane
// node (Talos's ControlPlane*Controller transforms; admission control and audit policy
// are the secrets controllers'): one resource each, with Talos's
// defaults for what the config leaves out; removed when the node is not (or no
// longer) a control plane node.

import type { ConfigBundle } from "../../config/bundle.js";
import type { ClusterConfig, ControlPlaneComponent, MachineConfig } from "../../config/types/v1alpha1.js";
import { KUBERNETES_VERSION } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  APIServerConfigType,
  APIServerId,
  ControllerManagerConfigType,
  ControllerManagerId,
  ExtraManifestsConfigId,
  ExtraManifestsConfigType,
  SchedulerConfigType,
  SchedulerId,
  type APIServerConfigSpec,
  type ControllerManagerConfigSpec,
  type ExtraManifestsConfigSpec,
  type ExtraVolume,
  type PodResources,
  type SchedulerConfigSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import type { Unstructured } from "../../resources/unstructured.js";
import { CONTROLPLANE_NAMESPACE } from "../../resources/catalog/k8s-secrets.js";
import { extraManifests } from "./manifest-input.js";

/** A v1alpha1 config with both sections, of a control plane node. */
export interface ControlPlaneConfig {
  machine: MachineConfig;
  cluster: ClusterConfig;
}

const DEFAULT_POD_CIDR = "10.244.0.0/16";
const DEFAULT_SERVICE_CIDR = "10.96.0.0/12";
const DEFAULT_API_SERVER_PORT = 6443;
const ETCD_CLIENT_URL = "https://localhost:2379";

/** The machine and cluster sections of a control plane node's config; undefined for any other node. */
export function controlPlaneConfig(bundle: ConfigBundle | undefined): ControlPlaneConfig | undefined {
  const doc = bundle?.v1alpha1();
  if (!doc?.machine || !doc.cluster) return undefined;
  if (doc.machine.type !== "init" && doc.machine.type !== "controlplane") return undefined;
  return { machine: doc.machine, cluster: doc.cluster };
}

/** One output resource computed from the machine config of a control plane node. */
class ConfigTransformController<S> implements Controller {
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs: { type: string }[];

  constructor(
    readonly name: string,
    private readonly type: string,
    private readonly id: string,
    private readonly transform: (cfg: ControlPlaneConfig) => S,
  ) {
    this.outputs = [{ type }];
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = controlPlaneConfig(
      ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
    );
    if (cfg) {
      const spec = this.transform(cfg);
      ctx.modify<S>(CONTROLPLANE_NAMESPACE, this.type, this.id, () => spec);
    }
    ctx.destroyOthers(CONTROLPLANE_NAMESPACE, this.type, new Set(cfg ? [this.id] : []));
  }
}

const image = (component: ControlPlaneComponent | undefined, repository: string) =>
  component?.image || `${repository}:${KUBERNETES_VERSION}`;

/** `.extraVolumes`: the volume is named after its mount path. */
function extraVolumes(component: ControlPlaneComponent | undefined): ExtraVolume[] {
  return (component?.extraVolumes ?? []).map((v) => ({
    name: (v.mountPath ?? "").replace(/[/_.]/g, "-").replace(/^-+|-+$/g, ""),
    hostPath: v.hostPath ?? "",
    mountPath: v.mountPath ?? "",
    readOnly: v.readonly ?? false,
  }));
}

/** A request or limit as Talos reads it: an integer or a string, anything else is unset. */
function quantity(values: Unstructured | undefined, key: string): string {
  const v = values?.[key];
  if (typeof v === "string") return v;
  if (typeof v === "number" && Number.isInteger(v)) return String(v);
  return "";
}

function resources(component: ControlPlaneComponent | undefined): PodResources {
  const r = component?.resources;
  const out: PodResources = {
    requests: { cpu: quantity(r?.requests, "cpu"), memory: quantity(r?.requests, "memory") },
  };
  const cpu = quantity(r?.limits, "cpu");
  const memory = quantity(r?.limits, "memory");
  if (cpu !== "" || memory !== "") {
    out.limits = {};
    if (cpu !== "") out.limits.cpu = cpu;
    if (memory !== "") out.limits.memory = memory;
  }
  return out;
}

export const podCIDRs = (cfg: ControlPlaneConfig) =>
  cfg.cluster.network?.podSubnets?.length ? cfg.cluster.network.podSubnets : [DEFAULT_POD_CIDR];
export const serviceCIDRs = (cfg: ControlPlaneConfig) =>
  cfg.cluster.network?.serviceSubnets?.length ? cfg.cluster.network.serviceSubnets : [DEFAULT_SERVICE_CIDR];
const cloudProvider = (cfg: ControlPlaneConfig) => (cfg.cluster.externalCloudProvider?.enabled ? "external" : "");

export function apiServerConfig(cfg: ControlPlaneConfig): APIServerConfigSpec {
  const c = cfg.cluster.apiServer;
  return {
    image: image(c, "registry.k8s.io/kube-apiserver"),
    cloudProvider: cloudProvider(cfg),
    controlPlaneEndpoint: cfg.cluster.controlPlane?.endpoint ?? "",
    etcdServers: [ETCD_CLIENT_URL],
    localPort: cfg.cluster.controlPlane?.localAPIServerPort || DEFAULT_API_SERVER_PORT,
    serviceCIDRs: serviceCIDRs(cfg),
    extraArgs: { ...c?.extraArgs },
    extraVolumes: extraVolumes(c),
    environmentVariables: { ...c?.env },
    podSecurityPolicyEnabled: !c?.disablePodSecurityPolicy,
    // Without node registration there is no pod IP to advertise.
    advertisedAddress: cfg.machine.kubelet?.skipNodeRegistration ? "" : "$(POD_IP)",
    resources: resources(c),
  };
}

export function controllerManagerConfig(cfg: ControlPlaneConfig): ControllerManagerConfigSpec {
  const c = cfg.cluster.controllerManager;
  return {
    enabled: !cfg.machine.controlPlane?.controllerManager?.disabled,
    image: image(c, "registry.k8s.io/kube-controller-manager"),
    cloudProvider: cloudProvider(cfg),
    podCIDRs: podCIDRs(cfg),
    serviceCIDRs: serviceCIDRs(cfg),
    extraArgs: { ...c?.extraArgs },
    extraVolumes: extraVolumes(c),
    environmentVariables: { ...c?.env },
    resources: resources(c),
  };
}

export function schedulerConfig(cfg: ControlPlaneConfig): SchedulerConfigSpec {
  const c = cfg.cluster.scheduler;
  const spec: SchedulerConfigSpec = {
    enabled: !cfg.machine.controlPlane?.scheduler?.disabled,
    image: image(c, "registry.k8s.io/kube-scheduler"),
    extraArgs: { ...c?.extraArgs },
    extraVolumes: extraVolumes(c),
    environmentVariables: { ...c?.env },
    resources: resources(c),
  };
  if (c?.config) spec.config = structuredClone(c.config);
  return spec;
}

/** The extra manifests the bootstrap manifests apply (manifest-input.ts), in Talos's resource shape. */
export function extraManifestsConfig(cfg: ControlPlaneConfig): ExtraManifestsConfigSpec {
  return {
    extraManifests: extraManifests(cfg).map((m) => ({
      name: m.name,
      url: m.url ?? "",
      priority: m.priority,
      ...(m.headers ? { extraHeaders: { ...m.headers } } : {}),
      inlineManifest: m.inline ?? "",
    })),
  };
}

export function controlPlaneConfigControllers(): Controller[] {
  return [
    new ConfigTransformController(
      "k8s.ControlPlaneAPIServerController",
      APIServerConfigType,
      APIServerId,
      apiServerConfig,
    ),
    new ConfigTransformController(
      "k8s.ControlPlaneControllerManagerController",
      ControllerManagerConfigType,
      ControllerManagerId,
      controllerManagerConfig,
    ),
    new ConfigTransformController(
      "k8s.ControlPlaneSchedulerController",
      SchedulerConfigType,
      SchedulerId,
      schedulerConfig,
    ),
    new ConfigTransformController(
      "k8s.ControlPlaneExtraManifestsController",
      ExtraManifestsConfigType,
      ExtraManifestsConfigId,
      extraManifestsConfig,
    ),
  ];
}
