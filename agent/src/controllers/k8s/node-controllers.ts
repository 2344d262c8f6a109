// The controllers of this node's Kubernetes Node object: the labels, taints and cordon it wants
// and their apply through the API server, and the Node as the API server has it.

import type { Controller } from "../../resources/controller-runtime.js";
import { NodeApplyController } from "./node-apply.js";
import { NodeCordonedSpecController } from "./node-cordoned-spec.js";
import { NodeLabelSpecController } from "./node-label-spec.js";
import { NodeStatusController } from "./node-status.js";
import { NodeTaintSpecController } from "./node-taint-spec.js";

export function nodeControllers(): Controller[] {
  return [
    new NodeLabelSpecController(),
    new NodeTaintSpecController(),
    new NodeCordonedSpecController(),
    new NodeApplyController(),
    new NodeStatusController(),
  ];
}
