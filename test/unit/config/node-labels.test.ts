import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig, validateConfig } from "../../../agent/src/config/index.js";
import { nodeLabelProblems, nodeTaintProblems, qualifiedNameProblem } from "../../../agent/src/config/node-labels.js";

test("qualified names: optional DNS-1123 prefix, a name of at most 63 characters (Talos's texts)", () => {
  for (const ok of ["zone", "node-role.kubernetes.io/control-plane", "a_b.c-d", "A1", "example.com/Z"])
    assert.equal(qualifiedNameProblem(ok), undefined, ok);
  assert.equal(qualifiedNameProblem("a/b/c"), 'invalid format: too many slashes: "a/b/c"');
  assert.equal(qualifiedNameProblem("/b"), 'prefix cannot be empty: "/b"');
  assert.equal(
    qualifiedNameProblem("Example.com/b"),
    'prefix "Example.com" is invalid: domain doesn\'t match required format: "Example.com"',
  );
  assert.equal(qualifiedNameProblem("example.com/"), 'name cannot be empty: "example.com/"');
  assert.equal(qualifiedNameProblem("-a"), 'name "-a" is invalid');
  const long = "a".repeat(64);
  assert.equal(qualifiedNameProblem(long), `name is too long: "${long}" (limit is 63)`);
});

test("node labels and taints: every problem, in key order", () => {
  assert.deepEqual(nodeLabelProblems({ zone: "a", empty: "", "b-": "x", c: "bad value" }), [
    'name "b-" is invalid',
    'label value "bad value" is invalid',
  ]);
  assert.deepEqual(nodeLabelProblems({ v: "v".repeat(64) }), [
    `label value length exceeds limit of 63: "${"v".repeat(64)}"`,
  ]);
  assert.deepEqual(
    nodeTaintProblems({
      gpu: "true:NoExecute",
      dedicated: "NoSchedule",
      soft: "x:PreferNoSchedule",
      "-k": "NoSchedule",
    }),
    ['name "-k" is invalid'],
  );
  assert.deepEqual(nodeTaintProblems({ a: "value", b: "v:Sometimes", c: "bad value:NoSchedule", d: ":NoSchedule" }), [
    'invalid taint effect: "value"',
    'invalid taint effect: "Sometimes"',
    'label value "bad value" is invalid',
  ]);
});

test("validateConfig reports bad node labels and taints at their fields", () => {
  const bundle = loadConfig(
    [
      "version: v1alpha1",
      "machine:",
      "  type: worker",
      "  nodeLabels: { ok: fine, 'bad key!': x }",
      "  nodeTaints: { gpu: 'true:Never' }",
      "cluster:",
      "  controlPlane: { endpoint: https://10.0.0.1:6443 }",
      "",
    ].join("\n"),
  );
  const { errors } = validateConfig(bundle, { mode: "container" });
  assert.deepEqual(
    errors.filter((e) => e.startsWith(".machine.node")),
    [
      '.machine.nodeLabels: invalid machine node labels: name "bad key!" is invalid',
      '.machine.nodeTaints: invalid machine node taints: invalid taint effect: "Never"',
    ],
  );
});
