import assert from "node:assert/strict";
import { test } from "node:test";
import { configFacts } from "../../../agent/src/machined/config-facts.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");

test("reads the machine settings machined acts on from the v1alpha1 document", () => {
  const text = [
    "version: v1alpha1",
    "machine:",
    "  type: worker",
    `  ca: { crt: ${b64("CA-CRT")}, key: "" }`,
    `  acceptedCAs: [{ crt: ${b64("OLD-CA")} }]`,
    "  certSANs: [1.2.3.4, node.example]",
    "  network: { hostname: n1 }",
    "  features: { rbac: false, apidCheckExtKeyUsage: true }",
    "---",
    "apiVersion: v1alpha1",
    "kind: SideroLinkConfig",
    "apiUrl: https://example.com",
  ].join("\n");
  const f = configFacts(text);
  assert.equal(f.machineType, "worker");
  assert.deepEqual(f.osCA, { crt: "CA-CRT", key: "" });
  assert.deepEqual(f.acceptedCAs, ["OLD-CA"]);
  assert.deepEqual(f.certSANs, ["1.2.3.4", "node.example"]);
  assert.equal(f.hostname, "n1");
  assert.equal(f.rbac, false);
  assert.equal(f.apidCheckExtKeyUsage, true);
});

test("rbac defaults on, ext key usage check off, when features are absent", () => {
  const f = configFacts("version: v1alpha1\nmachine:\n  type: controlplane\n");
  assert.equal(f.rbac, true);
  assert.equal(f.apidCheckExtKeyUsage, false);
  assert.equal(f.machineType, "controlplane");
});
