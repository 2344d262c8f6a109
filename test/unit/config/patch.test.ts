import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigParseError, InvalidInputError } from "../../../agent/src/errors.js";
import {
  applyJsonPatch,
  applyPatches,
  loadConfig,
  loadPatch,
  parseJsonPatch,
} from "../../../agent/src/config/index.js";
import { fixture, yamlDocs } from "./fixtures.js";

const p = (rel: string) => fixture(`configpatcher/${rel}`);

test("configpatcher/apply: strategic + JSON patches give expected.yaml", () => {
  const out = applyPatches(p("apply/config.yaml"), [
    p("apply/strategic1.yaml"),
    p("apply/jsonpatch1.yaml"),
    p("apply/jsonpatch2.yaml"),
    p("apply/strategic2.yaml"),
    p("apply/strategic3.yaml"),
  ]);
  assert.deepEqual(yamlDocs(out), yamlDocs(p("apply/expected.yaml")));
  assert.equal(out, p("apply/expected.yaml"), "same bytes as talosctl");
});

test("configpatcher/apply: inline manifest with a leading empty line gives expected_manifests.yaml", () => {
  // Talos trims leading blank lines of inline manifest contents so the result still loads.
  const out = applyPatches(p("apply/config.yaml"), [p("apply/strategic4.yaml")]);
  assert.deepEqual(yamlDocs(out), yamlDocs(p("apply/expected_manifests.yaml")));
  assert.equal(out, p("apply/expected_manifests.yaml"), "same bytes as talosctl");
  assert.doesNotThrow(() => loadConfig(out));
});

test("configpatcher/multidoc: strategic patches of two documents give expected.yaml", () => {
  const out = applyPatches(p("multidoc/config.yaml"), [p("multidoc/strategic1.yaml"), p("multidoc/strategic2.yaml")]);
  assert.deepEqual(yamlDocs(out), yamlDocs(p("multidoc/expected.yaml")));
  assert.equal(out, p("multidoc/expected.yaml"), "same bytes as talosctl");
});

test("configpatcher/multidoc: JSON patch on a multi-document config is refused", () => {
  assert.throws(
    () => applyPatches(p("multidoc/config.yaml"), [p("multidoc/jsonpatch.yaml"), p("multidoc/strategic1.yaml")]),
    { message: "JSON6902 patches are not supported for multi-document machine configuration" },
  );
});

test("no patches: text is returned unchanged", () => {
  assert.equal(applyPatches(p("apply/config.yaml"), []), p("apply/config.yaml"));
});

test("patch kind detection: a list is a JSON patch (YAML or JSON), a mapping is strategic", () => {
  assert.equal(loadPatch(p("apply/jsonpatch1.yaml")).type, "json");
  assert.equal(loadPatch('[{"op": "remove", "path": "/machine"}]').type, "json");
  assert.equal(loadPatch(p("apply/strategic1.yaml")).type, "strategic");
  assert.throws(() => loadPatch("machine:\n  bogus: 1\n"), ConfigParseError);
  assert.throws(() => loadPatch("- op: frobnicate\n  path: /x\n"), InvalidInputError);
});

test("JSON patch sees the canonical encoding (fields Talos always writes exist)", () => {
  const out = applyPatches("version: v1alpha1\nmachine: {}\n", [
    "- op: replace\n  path: /machine/type\n  value: controlplane\n",
  ]);
  assert.equal(loadConfig(out).machineType, "controlplane");
});

test("JSON patch results are re-decoded: unknown keys rejected", () => {
  assert.throws(
    () => applyPatches("version: v1alpha1\nmachine: {}\n", ["- op: add\n  path: /machine/bogus\n  value: 1\n"]),
    ConfigParseError,
  );
});

test("RFC 6902 operations", () => {
  const doc = { a: { b: [1, 2, 3] }, c: "x" };
  const ops = parseJsonPatch([
    { op: "add", path: "/a/b/1", value: 9 },
    { op: "add", path: "/a/b/-", value: 4 },
    { op: "remove", path: "/a/b/0" },
    { op: "replace", path: "/c", value: "y" },
    { op: "copy", from: "/c", path: "/d" },
    { op: "move", from: "/d", path: "/e" },
    { op: "test", path: "/e", value: "y" },
    { op: "add", path: "/a~1b", value: true },
  ]);
  assert.deepEqual(applyJsonPatch(doc, ops), { a: { b: [9, 2, 3, 4] }, c: "y", e: "y", "a/b": true });
  assert.deepEqual(doc, { a: { b: [1, 2, 3] }, c: "x" }, "input untouched");
  assert.throws(() => applyJsonPatch(doc, parseJsonPatch([{ op: "test", path: "/c", value: "z" }])), /test failed/);
  assert.throws(() => applyJsonPatch(doc, parseJsonPatch([{ op: "replace", path: "/nope", value: 1 }])), /missing key/);
  assert.throws(() => applyJsonPatch(doc, parseJsonPatch([{ op: "add", path: "/x/y", value: 1 }])), /missing path/);
  assert.throws(() => applyJsonPatch(doc, parseJsonPatch([{ op: "remove", path: "/a/b/7" }])), /out of bounds/);
});

test("patched bundle: warnings reflect the result", async () => {
  const { applyPatchesToBundle, loadPatches } = await import("../../../agent/src/config/index.js");
  const before = loadConfig("version: v1alpha1\nmachine:\n  type: join\n");
  assert.equal(before.warnings.length, 1);
  const after = applyPatchesToBundle(before, loadPatches(["machine:\n  type: worker\n"]));
  assert.deepEqual(after.warnings, []);
  assert.equal(after.machineType, "worker");
  assert.match(after.toYaml(), /^version: v1alpha1\nmachine:\n    type: worker\n/);
});
