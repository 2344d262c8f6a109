// k8s.NodeIPConfigController: NodeIPConfig `kubelet`, the subnets the kubelet's node IP
// is picked from — `.machine.kubelet.nodeIP.validSubnets`, else any address of the
// service subnets' families — and those it never is: the pod and service subnets and
// every VIP of the machine's interfaces and VLANs.

import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { defaults } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  NodeIPConfigType,
  type NodeIPConfigSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import { serviceCIDRs } from "./kubelet-config.js";

export function nodeIPConfigSpec(doc: V1Alpha1Config): NodeIPConfigSpec {
  const valid = doc.machine?.kubelet?.nodeIP?.validSubnets ?? [];
  const services = serviceCIDRs(doc);
  const podSubnets = doc.cluster?.network?.podSubnets ?? [];
  const vips: string[] = [];
  for (const device of doc.machine?.network?.interfaces ?? []) {
    if (device.vip?.ip) vips.push(device.vip.ip);
    for (const vlan of device.vlans ?? []) if (vlan.vip?.ip) vips.push(vlan.vip.ip);
  }
  return {
    validSubnets: valid.length ? [...valid] : services.map((cidr) => (cidr.includes(":") ? "::/0" : "0.0.0.0/0")),
    excludeSubnets: [...(podSubnets.length ? podSubnets : defaults.podSubnets), ...services, ...vips],
  };
}

export class NodeIPConfigController implements Controller {
  readonly name = "k8s.NodeIPConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeIPConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    if (!doc?.machine || !doc.cluster) {
      ctx.destroyOthers(K8S_NAMESPACE, NodeIPConfigType, new Set());
      return;
    }
    const spec = nodeIPConfigSpec(doc);
    ctx.modify<NodeIPConfigSpec>(K8S_NAMESPACE, NodeIPConfigType, KubeletId, () => spec);
  }
}
