import assert from "node:assert/strict";
import { test } from "node:test";
import { maintenanceConsoleLines } from "../../../agent/src/machined/maintenance-console.js";

test("console lines name the addresses, the wait and the fingerprint", () => {
  const lines = maintenanceConsoleLines({ addresses: ["10.0.0.5", "fd00::5"], port: 50000, fingerprint: "abc=" });
  assert.ok(lines.includes("\t10.0.0.5"));
  assert.ok(lines.includes("\tfd00::5"));
  assert.ok(lines.some((l) => l.includes("waiting for configuration")));
  assert.ok(lines.some((l) => l.includes("--nodes 10.0.0.5 --file")));
  assert.ok(lines.some((l) => l.includes("--cert-fingerprint 'abc='")));
  const other = maintenanceConsoleLines({ addresses: ["127.0.0.1"], port: 51000, fingerprint: "x" });
  assert.ok(other.some((l) => l.includes("--nodes 127.0.0.1:51000")));
});
