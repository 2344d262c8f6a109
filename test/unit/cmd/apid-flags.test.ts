import assert from "node:assert/strict";
import { test } from "node:test";
import { apidFlags } from "../../../agent/src/cmd/machined-run.js";

test("apid's V8 flags travel in BASALT_V8_FLAGS, not on node's command line (which would refuse Node's code cache)", () => {
  assert.deepEqual(apidFlags({}), { args: [], env: { BASALT_V8_FLAGS: "--optimize-for-size" } });
});

test("BASALT_APID_NODE_FLAGS puts exactly its flags on apid's command line and none in BASALT_V8_FLAGS", () => {
  assert.deepEqual(apidFlags({ BASALT_APID_NODE_FLAGS: " --optimize-for-size  --cpu-prof " }), {
    args: ["--optimize-for-size", "--cpu-prof"],
    env: {},
  });
  assert.deepEqual(apidFlags({ BASALT_APID_NODE_FLAGS: "" }), { args: [], env: {} });
});
