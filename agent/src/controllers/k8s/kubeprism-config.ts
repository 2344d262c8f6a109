// k8s.KubePrismConfigController: KubePrismConfig `k8s-loadbalancer-config` while
// `.machine.features.kubePrism.enabled`: listen on 127.0.0.1 at the configured port
// (7445 unless set), forwarding to KubePrismEndpoints.

import type { ConfigBundle } from "../../config/bundle.js";
import { defaults } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  K8S_NAMESPACE,
  KubePrismConfigId,
  KubePrismConfigType,
  KubePrismEndpointsId,
  KubePrismEndpointsType,
  type KubePrismConfigSpec,
  type KubePrismEndpointsSpec,
} from "../../resources/catalog/k8s-kubelet.js";

export const KUBEPRISM_HOST = "127.0.0.1";

export class KubePrismConfigController implements Controller {
  readonly name = "k8s.KubePrismConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: KubePrismEndpointsType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubePrismConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const machine = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine;
    const prism = machine?.features?.kubePrism;
    if (!machine || prism?.enabled !== true) {
      ctx.destroyOthers(K8S_NAMESPACE, KubePrismConfigType, new Set());
      return;
    }
    const endpoints = ctx.get<KubePrismEndpointsSpec>(
      K8S_NAMESPACE,
      KubePrismEndpointsType,
      KubePrismEndpointsId,
    )?.spec;
    if (!endpoints) return;
    const spec: KubePrismConfigSpec = {
      host: KUBEPRISM_HOST,
      port: prism.port || defaults.kubePrismPort,
      endpoints: endpoints.endpoints,
    };
    ctx.modify<KubePrismConfigSpec>(K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId, () => spec);
  }
}
