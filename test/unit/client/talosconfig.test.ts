import assert from "node:assert/strict";
import { test } from "node:test";
import { NotFoundError } from "../../../agent/src/errors.js";
import { withPort } from "../../../agent/src/client/client.js";
import { parseTalosconfig } from "../../../agent/src/client/talosconfig.js";

const b64 = (s: string) => Buffer.from(s).toString("base64");
const text = `context: demo
contexts:
  demo:
    endpoints: [10.0.0.2]
    nodes: [10.0.0.2, 10.0.0.3]
    ca: ${b64("CA")}
    crt: ${b64("CRT")}
    key: ${b64("KEY")}
  other:
    endpoints: [10.0.0.9]
`;

test("reads the current context with decoded PEM material", () => {
  const ctx = parseTalosconfig(text);
  assert.equal(ctx.name, "demo");
  assert.deepEqual(ctx.endpoints, ["10.0.0.2"]);
  assert.deepEqual(ctx.nodes, ["10.0.0.2", "10.0.0.3"]);
  assert.equal(ctx.ca, "CA");
  assert.equal(ctx.crt, "CRT");
  assert.equal(ctx.key, "KEY");
  assert.deepEqual(parseTalosconfig(text, "other").endpoints, ["10.0.0.9"]);
  assert.throws(() => parseTalosconfig(text, "missing"), NotFoundError);
});

test("endpoints get port 50000 unless they name one", () => {
  assert.equal(withPort("10.0.0.2"), "10.0.0.2:50000");
  assert.equal(withPort("10.0.0.2:51000"), "10.0.0.2:51000");
  assert.equal(withPort("fd00::1"), "[fd00::1]:50000");
  assert.equal(withPort("[fd00::1]:5"), "[fd00::1]:5");
  assert.equal(withPort("node.example"), "node.example:50000");
});
