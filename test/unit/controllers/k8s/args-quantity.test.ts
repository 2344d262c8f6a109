// Talos's flag merge rules (pkg/argsbuilder) and Kubernetes's canonical quantities.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Args, DeniedArgError } from "../../../../agent/src/controllers/k8s/args-builder.js";
import {
  formatQuantity,
  parseQuantity,
  QuantityError,
  quantityValue,
} from "../../../../agent/src/controllers/k8s/quantity.js";

test("extraArgs overwrite, add to comma lists without repeats, or are refused; flags come sorted by key", () => {
  const args = new Args({ "b-flag": "1", plugins: "A,B", gates: "" });
  args.merge(
    { "b-flag": "2", plugins: "B, C,C", gates: "X=true", "a-flag": "new" },
    { plugins: "additive", gates: "additive" },
  );
  assert.deepEqual(args.render(), ["--a-flag=new", "--b-flag=2", "--gates=X=true", "--plugins=A,B,C,C"]);
  assert.throws(
    () => args.merge({ secret: "x" }, { secret: "denied" }),
    (err: Error) => err instanceof DeniedArgError && err.message === 'extra arg "secret" is not allowed',
  );
});

test("quantities print in Kubernetes's canonical form; values round up to whole units", () => {
  const cases: [string, string][] = [
    ["200m", "200m"],
    ["0.5", "500m"],
    ["1", "1"],
    ["2000m", "2"],
    ["1500m", "1500m"],
    ["512Mi", "512Mi"],
    ["1024Mi", "1Gi"],
    ["1.5Gi", "1536Mi"],
    ["1000", "1k"],
    ["128M", "128M"],
    ["100Ki", "100Ki"],
    ["0.5Ki", "512"],
    ["1e3", "1e3"],
    ["1.5e3", "1500"],
    ["0", "0"],
    ["0.0000000001", "1n"],
  ];
  assert.deepEqual(
    cases.map(([text]) => [text, formatQuantity(parseQuantity(text))]),
    cases,
  );
  assert.equal(quantityValue(parseQuantity("4Gi")), 4294967296n);
  assert.equal(quantityValue(parseQuantity("1500m")), 2n);
  assert.throws(() => parseQuantity("12 GB"), QuantityError);
  assert.throws(() => parseQuantity("abc"), QuantityError);
});
