// k8s.NodeLabelSpecController: one NodeLabelSpec per label this node wants on its
// Kubernetes Node: `.machine.nodeLabels`, plus `node-role.kubernetes.io/control-plane`
// (empty value) on a control plane. Labels no longer wanted are destroyed.

import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import { NodeLabelSpecType, type NodeLabelSpecSpec } from "../../resources/catalog/k8s-nodes.js";

/** The label every control plane carries (constants.LabelNodeRoleControlPlane). */
export const CONTROL_PLANE_ROLE = "node-role.kubernetes.io/control-plane";

/** Talos's IsControlPlane: `init` or `controlplane` (a `join` machine is a worker). */
export const isControlPlaneMachine = (type: string | undefined): boolean => type === "controlplane" || type === "init";

/** The labels of a machine config (none without a `.machine` section). */
export function nodeLabels(doc: V1Alpha1Config | undefined): Map<string, string> {
  const machine = doc?.machine;
  if (!machine) return new Map();
  const labels = new Map(Object.entries(machine.nodeLabels ?? {}));
  if (isControlPlaneMachine(machine.type)) labels.set(CONTROL_PLANE_ROLE, "");
  return labels;
}

export class NodeLabelSpecController implements Controller {
  readonly name = "k8s.NodeLabelSpecController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeLabelSpecType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    const labels = nodeLabels(doc);
    for (const [key, value] of labels) {
      ctx.modify<NodeLabelSpecSpec>(K8S_NAMESPACE, NodeLabelSpecType, key, () => ({ key, value }));
    }
    ctx.destroyOthers(K8S_NAMESPACE, NodeLabelSpecType, new Set(labels.keys()));
  }
}
