// The Node resources as talosctl get shows them: namespace, sensitivity, columns, proto and YAML
// (Talos v1.7's pkg/machinery/resources/k8s/node_*.go and k8s.proto).
import assert from "node:assert/strict";
import { test } from "node:test";
import { decode } from "../../../agent/src/api/index.js";
import { encodeSpec, yamlSpec } from "../../../agent/src/resources/definitions.js";
import {
  nodeCordonedSpecDefinition,
  nodeLabelSpecDefinition,
  nodeStatusDefinition,
  nodeTaintSpecDefinition,
} from "../../../agent/src/resources/catalog/k8s-nodes.js";

test("NodeLabelSpecs, NodeTaintSpecs, NodeCordonedSpecs: k8s, sensitive, Talos's columns", () => {
  const columns = (d: { spec: { printColumns: { name: string; jsonPath: string }[] } }) =>
    d.spec.printColumns.map((c) => `${c.name}=${c.jsonPath}`);
  for (const def of [nodeLabelSpecDefinition, nodeTaintSpecDefinition, nodeCordonedSpecDefinition]) {
    assert.equal(def.defaultNamespace, "k8s", def.type);
    assert.equal(def.spec.sensitivity, "sensitive", def.type);
  }
  assert.deepEqual(columns(nodeLabelSpecDefinition), ["Value={.value}"]);
  assert.deepEqual(columns(nodeTaintSpecDefinition), ["Effect={.effect}", "Value={.value}"]);
  assert.deepEqual(columns(nodeCordonedSpecDefinition), []);
  assert.equal(nodeStatusDefinition.type, "NodeStatuses.kubernetes.talos.dev");
  assert.equal(nodeStatusDefinition.defaultNamespace, "k8s");
  assert.notEqual(nodeStatusDefinition.spec.sensitivity, "sensitive");
  assert.deepEqual(columns(nodeStatusDefinition), ["Ready={.nodeReady}", "Unschedulable={.unschedulable}"]);
});

test("their specs in proto and YAML", () => {
  const taint = { key: "gpu", effect: "NoExecute", value: "true" };
  assert.deepEqual(
    decode("talos.resource.definitions.k8s.NodeTaintSpecSpec", encodeSpec(nodeTaintSpecDefinition, taint)),
    taint,
  );
  assert.equal(yamlSpec(nodeTaintSpecDefinition, taint), 'key: gpu\neffect: NoExecute\nvalue: "true"\n');
  const label = { key: "node-role.kubernetes.io/control-plane", value: "" };
  assert.equal(yamlSpec(nodeLabelSpecDefinition, label), 'key: node-role.kubernetes.io/control-plane\nvalue: ""\n');
  assert.equal(yamlSpec(nodeCordonedSpecDefinition, {}), "{}\n");
  assert.equal(encodeSpec(nodeCordonedSpecDefinition, {}).length, 0);
  const status = {
    nodename: "cp-1",
    nodeReady: true,
    unschedulable: false,
    labels: { zone: "a", "kubernetes.io/hostname": "cp-1" },
    annotations: { "talos.dev/owned-labels": '["zone"]' },
  };
  assert.equal(
    yamlSpec(nodeStatusDefinition, status),
    [
      "nodename: cp-1",
      "nodeReady: true",
      "unschedulable: false",
      "labels:",
      "    kubernetes.io/hostname: cp-1",
      "    zone: a",
      "annotations:",
      "    talos.dev/owned-labels: '[\"zone\"]'",
      "",
    ].join("\n"),
  );
  const wire = decode("talos.resource.definitions.k8s.NodeStatusSpec", encodeSpec(nodeStatusDefinition, status));
  assert.deepEqual(wire.labels, status.labels);
  assert.equal(wire.node_ready, true);
});
