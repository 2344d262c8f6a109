// k8s.NodeCordonedSpecController: NodeCordonedSpec `cordoned` while the machine is
// shutting down, upgrading or resetting (its workloads should go elsewhere); none once it
// is booting or running again. Other stages leave it as it is.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import { NodeCordonedId, NodeCordonedSpecType, type NodeCordonedSpecSpec } from "../../resources/catalog/k8s-nodes.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStage,
  type MachineStatusSpec,
} from "../../resources/catalog/runtime.js";

const cordonedStages: ReadonlySet<MachineStage> = new Set(["shutting down", "upgrading", "resetting"]);
const uncordonedStages: ReadonlySet<MachineStage> = new Set(["booting", "running"]);

export class NodeCordonedSpecController implements Controller {
  readonly name = "k8s.NodeCordonedSpecController";
  readonly inputs = [
    { namespace: RUNTIME_NAMESPACE, type: MachineStatusType, id: MachineStatusId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeCordonedSpecType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const stage = ctx.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)?.spec.stage;
    if (stage === undefined) return;
    if (cordonedStages.has(stage)) {
      ctx.modify<NodeCordonedSpecSpec>(K8S_NAMESPACE, NodeCordonedSpecType, NodeCordonedId, () => ({}));
    } else if (uncordonedStages.has(stage)) {
      ctx.destroyOthers(K8S_NAMESPACE, NodeCordonedSpecType, new Set());
    }
  }
}
