// Namespace `k8s`: what this node wants on its Kubernetes Node object (NodeLabelSpecs and
// NodeTaintSpecs, one per key, id = the key; NodeCordonedSpec while it wants to be
// cordoned) and what the API server says of it (NodeStatus, id = the node name). The
// three specs are sensitive, as Talos's (an os:admin reads them). Types, columns and YAML
// as Talos v1.7 publishes them (pkg/machinery/resources/k8s/node_*.go).

import { autoProto } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { K8S_NAMESPACE, sortedKeys } from "./k8s-kubelet.js";

// --- NodeLabelSpecs.k8s.talos.dev (id = the label's key) ---
export const NodeLabelSpecType = "NodeLabelSpecs.k8s.talos.dev";
export interface NodeLabelSpecSpec {
  key: string;
  value: string;
}
export const nodeLabelSpecDefinition = defineResource<NodeLabelSpecSpec>({
  type: NodeLabelSpecType,
  defaultNamespace: K8S_NAMESPACE,
  sensitive: true,
  printColumns: [{ name: "Value", jsonPath: "{.value}" }],
  protoSpecType: "talos.resource.definitions.k8s.NodeLabelSpecSpec",
  toProto: autoProto("talos.resource.definitions.k8s.NodeLabelSpecSpec"),
});

// --- NodeTaintSpecs.k8s.talos.dev (id = the taint's key) ---
export const NodeTaintSpecType = "NodeTaintSpecs.k8s.talos.dev";
/** Field order is Talos's (key, effect, value): the YAML keeps it. */
export interface NodeTaintSpecSpec {
  key: string;
  effect: string;
  value: string;
}
export const nodeTaintSpecDefinition = defineResource<NodeTaintSpecSpec>({
  type: NodeTaintSpecType,
  defaultNamespace: K8S_NAMESPACE,
  sensitive: true,
  printColumns: [
    { name: "Effect", jsonPath: "{.effect}" },
    { name: "Value", jsonPath: "{.value}" },
  ],
  protoSpecType: "talos.resource.definitions.k8s.NodeTaintSpecSpec",
  toProto: autoProto("talos.resource.definitions.k8s.NodeTaintSpecSpec"),
  toYaml: (s) => marshalGoYaml({ key: s.key, effect: s.effect, value: s.value }),
});

// --- NodeCordonedSpecs.k8s.talos.dev (id "cordoned"; exists while the node wants to be cordoned) ---
export const NodeCordonedSpecType = "NodeCordonedSpecs.k8s.talos.dev";
export const NodeCordonedId = "cordoned";
export type NodeCordonedSpecSpec = Record<string, never>;
export const nodeCordonedSpecDefinition = defineResource<NodeCordonedSpecSpec>({
  type: NodeCordonedSpecType,
  defaultNamespace: K8S_NAMESPACE,
  sensitive: true,
  // Talos's spec is an empty struct registered without a message of its own.
  protoSpecType: "google.protobuf.Empty",
  toProto: () => ({}),
});

// --- NodeStatuses.kubernetes.talos.dev (id = the node name) ---
export const NodeStatusType = "NodeStatuses.kubernetes.talos.dev";
export interface NodeStatusSpec {
  nodename: string;
  nodeReady: boolean;
  unschedulable: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
export const nodeStatusDefinition = defineResource<NodeStatusSpec>({
  type: NodeStatusType,
  defaultNamespace: K8S_NAMESPACE,
  printColumns: [
    { name: "Ready", jsonPath: "{.nodeReady}" },
    { name: "Unschedulable", jsonPath: "{.unschedulable}" },
  ],
  protoSpecType: "talos.resource.definitions.k8s.NodeStatusSpec",
  toProto: autoProto("talos.resource.definitions.k8s.NodeStatusSpec"),
  // yaml.v3 writes Go maps with their keys sorted.
  toYaml: (s) =>
    marshalGoYaml({
      nodename: s.nodename,
      nodeReady: s.nodeReady,
      unschedulable: s.unschedulable,
      labels: sortedKeys(s.labels),
      annotations: sortedKeys(s.annotations),
    }),
});

export const nodeDefinitions: readonly ResourceDefinition<never>[] = [
  nodeLabelSpecDefinition,
  nodeTaintSpecDefinition,
  nodeCordonedSpecDefinition,
  nodeStatusDefinition,
];
