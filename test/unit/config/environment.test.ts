import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isProxyVariable,
  mergeEnvironment,
  splitEnvEntry,
  userEnvironment,
} from "../../../agent/src/config/environment.js";
import { loadConfig } from "../../../agent/src/config/load.js";

test("the kernel's talos.environment= entries come first, then .machine.env, as Talos's environment.Get", () => {
  const config = loadConfig(
    Buffer.from(
      "version: v1alpha1\nmachine:\n  type: worker\n  env:\n    https_proxy: http://proxy.example:3128\n    GRPC_GO_LOG_SEVERITY_LEVEL: info\n",
    ),
  );
  const cmdline = new Map([["talos.environment", ["foo=bar", "no_proxy=10.0.0.0/8"]]]);
  assert.deepEqual(userEnvironment(cmdline, config), [
    "foo=bar",
    "no_proxy=10.0.0.0/8",
    "https_proxy=http://proxy.example:3128",
    "GRPC_GO_LOG_SEVERITY_LEVEL=info",
  ]);
  assert.deepEqual(userEnvironment(new Map(), undefined), []);
});

test("proxy variables in any case; a later entry of a key replaces the earlier in its place", () => {
  assert.deepEqual(["HTTP_PROXY", "https_proxy", "No_Proxy", "all_proxy", "PATH"].map(isProxyVariable), [
    true,
    true,
    true,
    false,
    false,
  ]);
  assert.deepEqual(mergeEnvironment(["A=1", "B=2"], ["C=3", "A=4"]), ["A=4", "B=2", "C=3"]);
});

test("an entry splits at its first '='; one without '=' is all key (merged by that key, never set)", () => {
  assert.deepEqual(splitEnvEntry("URL=http://h/?a=b"), { key: "URL", value: "http://h/?a=b" });
  assert.deepEqual(splitEnvEntry("EMPTY="), { key: "EMPTY", value: "" });
  assert.deepEqual(splitEnvEntry("BARE"), { key: "BARE", value: undefined });
  assert.deepEqual(mergeEnvironment(["BARE", "X=1"], ["BARE=2"]), ["BARE=2", "X=1"]);
});
