import assert from "node:assert/strict";
import { test } from "node:test";
import { apidLateV8Flags, apidNodeFlags } from "../../../agent/src/cmd/machined-run.js";

test("apid's V8 flags travel in BASALT_V8_FLAGS, not on node's command line (which would refuse Node's code cache)", () => {
  assert.deepEqual(apidNodeFlags({}), []);
  assert.deepEqual(apidLateV8Flags({}), { BASALT_V8_FLAGS: "--optimize-for-size" });
});

test("BASALT_APID_NODE_FLAGS puts exactly its flags on apid's command line and none in BASALT_V8_FLAGS", () => {
  const env = { BASALT_APID_NODE_FLAGS: " --optimize-for-size  --cpu-prof " };
  assert.deepEqual(apidNodeFlags(env), ["--optimize-for-size", "--cpu-prof"]);
  assert.deepEqual(apidLateV8Flags(env), {});
  assert.deepEqual(apidNodeFlags({ BASALT_APID_NODE_FLAGS: "" }), []);
});
