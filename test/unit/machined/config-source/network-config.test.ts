import assert from "node:assert/strict";
import { test } from "node:test";
import { splitFqdn } from "../../../../agent/src/machined/config-source/network-config.js";

test("a platform hostname splits at its first dot", () => {
  assert.deepEqual(splitFqdn("node-1.lab.example"), { hostname: "node-1", domainname: "lab.example" });
  assert.deepEqual(splitFqdn("node-1"), { hostname: "node-1", domainname: "" });
});
