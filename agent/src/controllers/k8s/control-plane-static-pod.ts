// StaticPods of the control plane from the *Config resources, once the local etcd is
// healthy (kube-apiserver talks to it) and the secrets and config files the pods
// mount are written. Talos's ControlPlaneStaticPodController.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../resources/catalog/runtime.js";
import {
  APIServerConfigType,
  APIServerId,
  ControllerManagerConfigType,
  ControllerManagerId,
  K8S_NAMESPACE,
  SchedulerConfigType,
  SchedulerId,
  StaticPodType,
  type APIServerConfigSpec,
  type ControllerManagerConfigSpec,
  type SchedulerConfigSpec,
  type StaticPodSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import {
  CONTROLPLANE_NAMESPACE,
  ConfigStatusType,
  SecretsStatusType,
  StaticPodConfigStatusId,
  StaticPodSecretsStatusId,
  type RenderStatusSpec,
} from "../../resources/catalog/k8s-secrets.js";
import type { Unstructured } from "../../resources/unstructured.js";
import { apiServerPod, controllerManagerPod, schedulerPod, type PodVersions } from "./control-plane-pods.js";

export class ControlPlaneStaticPodController implements Controller {
  readonly name = "k8s.ControlPlaneStaticPodController";
  readonly inputs = [
    { namespace: CONTROLPLANE_NAMESPACE, type: APIServerConfigType, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: ControllerManagerConfigType, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: SchedulerConfigType, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: SecretsStatusType, id: StaticPodSecretsStatusId, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: ConfigStatusType, id: StaticPodConfigStatusId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "etcd", kind: "weak" as const },
  ];
  readonly outputs = [{ type: StaticPodType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const etcd = ctx.get<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, "etcd");
    const secrets = ctx.get<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, SecretsStatusType, StaticPodSecretsStatusId);
    const configFiles = ctx.get<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, ConfigStatusType, StaticPodConfigStatusId);
    if (!etcd || !secrets || !configFiles) {
      ctx.destroyOthers(K8S_NAMESPACE, StaticPodType, new Set());
      return;
    }
    // An etcd that is there but not (yet, or no longer) healthy leaves the pods as they are.
    if (!etcd.spec.healthy) return;

    const base = { secrets: secrets.spec.version, configFiles: configFiles.spec.version };
    const rendered = new Set<string>();
    const render = <S>(
      type: string,
      id: string,
      build: (spec: S, versions: PodVersions) => Unstructured | undefined,
    ) => {
      const config = ctx.get<S>(CONTROLPLANE_NAMESPACE, type, id);
      const pod = config && build(config.spec, { ...base, config: String(config.metadata.version) });
      if (!pod) return;
      ctx.modify<StaticPodSpec>(K8S_NAMESPACE, StaticPodType, id, () => ({ pod }));
      rendered.add(id);
    };
    render<APIServerConfigSpec>(APIServerConfigType, APIServerId, apiServerPod);
    render<ControllerManagerConfigSpec>(ControllerManagerConfigType, ControllerManagerId, (s, v) =>
      s.enabled ? controllerManagerPod(s, v) : undefined,
    );
    render<SchedulerConfigSpec>(SchedulerConfigType, SchedulerId, (s, v) =>
      s.enabled ? schedulerPod(s, v) : undefined,
    );
    ctx.destroyOthers(K8S_NAMESPACE, StaticPodType, rendered);
  }
}
