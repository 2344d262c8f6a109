import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeletConfigController } from "../../../../agent/src/controllers/k8s/kubelet-config.js";
import { KubeletSpecController } from "../../../../agent/src/controllers/k8s/kubelet-spec.js";
import { NodeIPConfigController } from "../../../../agent/src/controllers/k8s/nodeip-config.js";
import { NodeIPController } from "../../../../agent/src/controllers/k8s/nodeip.js";
import { NodenameController } from "../../../../agent/src/controllers/k8s/nodename.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  KubeletSpecType,
  type KubeletSpecSpec,
  type Mount,
} from "../../../../agent/src/resources/catalog/k8s-kubelet.js";
import { until } from "../secrets/wait.js";
import { fixtureJson, fixtureText, genConfigs, node, withPatch, type NodeFacts } from "./harness.js";

interface Expected {
  node: NodeFacts;
  image: string;
  expectedNodename: string;
  args: string[];
  extraMounts: Mount[];
  config: Record<string, unknown>;
}

const controllers = () => [
  new NodenameController(),
  new NodeIPConfigController(),
  new NodeIPController(),
  new KubeletConfigController(),
  new KubeletSpecController(),
];

/** Each field on its own, so a difference names the field. */
function assertSpec(spec: KubeletSpecSpec, want: Expected): void {
  assert.equal(spec.image, want.image);
  assert.deepEqual(spec.args, want.args);
  assert.equal(spec.expectedNodename, want.expectedNodename);
  assert.deepEqual(spec.extraMounts, want.extraMounts);
  for (const field of new Set([...Object.keys(want.config), ...Object.keys(spec.config)])) {
    assert.deepEqual(spec.config[field], want.config[field], `config field ${field}`);
  }
}

test("gen config worker: KubeletSpec args and KubeletConfiguration as Talos v1.7.6 renders them", async (t) => {
  const want = fixtureJson<Expected>("gen-config-worker.json");
  const { state } = node(t, (await genConfigs()).worker, want.node, controllers());
  const spec = await until(
    "KubeletSpec",
    () => state.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec,
  );
  assertSpec(spec, want);
});

test("extraArgs, extraMounts, extraConfig, validSubnets, registerWithFQDN: as Talos v1.7.6 renders them", async (t) => {
  const want = fixtureJson<Expected>("custom-worker.json");
  const config = withPatch((await genConfigs()).worker, fixtureText("custom-patch.yaml"));
  const { state } = node(t, config, want.node, controllers());
  const spec = await until(
    "KubeletSpec",
    () => state.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec,
  );
  assertSpec(spec, want);
});

test("the spec follows the node: a new address changes --node-ip", async (t) => {
  const want = fixtureJson<Expected>("gen-config-worker.json");
  const { state, setRouted } = node(t, (await genConfigs()).worker, want.node, controllers());
  await until("KubeletSpec", () => state.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec);
  setRouted(["10.5.9.9/24"]);
  const spec = await until("--node-ip=10.5.9.9", () => {
    const s = state.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec;
    return s?.args.includes("--node-ip=10.5.9.9") ? s : undefined;
  });
  assert.ok(!spec.args.includes("--node-ip=10.5.0.3"));
});
