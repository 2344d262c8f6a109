// k8s.NodeTaintSpecController: one NodeTaintSpec per taint this node wants on its
// Kubernetes Node: `node-role.kubernetes.io/control-plane:NoSchedule` on a control plane
// unless `.cluster.allowSchedulingOnControlPlanes`, then `.machine.nodeTaints`
// (`key: value:Effect` or `key: Effect`). Taints no longer wanted are destroyed.

import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import { NodeTaintSpecType, type NodeTaintSpecSpec } from "../../resources/catalog/k8s-nodes.js";
import { CONTROL_PLANE_ROLE, isControlPlaneMachine } from "./node-label-spec.js";

/** Talos's ScheduleOnControlPlanes: the current key, else the deprecated one. */
const schedulesOnControlPlanes = (cluster: NonNullable<V1Alpha1Config["cluster"]>): boolean =>
  cluster.allowSchedulingOnControlPlanes ?? cluster.allowSchedulingOnMasters ?? false;

/** `value:Effect` or a bare `Effect` (the first `:` splits). */
function parseTaint(key: string, text: string): NodeTaintSpecSpec {
  const at = text.indexOf(":");
  return at < 0 ? { key, effect: text, value: "" } : { key, effect: text.slice(at + 1), value: text.slice(0, at) };
}

/** The taints of a machine config, by key (a `.machine.nodeTaints` entry overrides the control plane's). */
export function nodeTaints(doc: V1Alpha1Config | undefined): Map<string, NodeTaintSpecSpec> {
  const taints = new Map<string, NodeTaintSpecSpec>();
  const machine = doc?.machine;
  if (!machine) return taints;
  if (doc.cluster && isControlPlaneMachine(machine.type) && !schedulesOnControlPlanes(doc.cluster)) {
    taints.set(CONTROL_PLANE_ROLE, { key: CONTROL_PLANE_ROLE, effect: "NoSchedule", value: "" });
  }
  for (const [key, text] of Object.entries(machine.nodeTaints ?? {})) taints.set(key, parseTaint(key, text));
  return taints;
}

export class NodeTaintSpecController implements Controller {
  readonly name = "k8s.NodeTaintSpecController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeTaintSpecType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    const taints = nodeTaints(doc);
    for (const [key, taint] of taints) {
      ctx.modify<NodeTaintSpecSpec>(K8S_NAMESPACE, NodeTaintSpecType, key, () => taint);
    }
    ctx.destroyOthers(K8S_NAMESPACE, NodeTaintSpecType, new Set(taints.keys()));
  }
}
