import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { joinHostPort, splitHostPort } from "../../../agent/src/sys/host-port.js";

test("splitHostPort: host:port of an IPv4 address, a name and a bracketed IPv6 address; a listen address's wildcard hosts", () => {
  assert.deepEqual(splitHostPort("10.0.0.2:51000"), { host: "10.0.0.2", port: 51000 });
  assert.deepEqual(splitHostPort("node.example:50001"), { host: "node.example", port: 50001 });
  assert.deepEqual(splitHostPort("[fd00::1]:50000"), { host: "fd00::1", port: 50000 });
  assert.deepEqual(splitHostPort("0.0.0.0:50000"), { host: "0.0.0.0", port: 50000 });
  assert.deepEqual(splitHostPort("[::]:50000"), { host: "::", port: 50000 });
  assert.deepEqual(splitHostPort(":50000"), { host: "", port: 50000 });
});

test("splitHostPort: a host alone gets the default port; without one it is refused", () => {
  assert.deepEqual(splitHostPort("10.0.0.2", 50000), { host: "10.0.0.2", port: 50000 });
  assert.deepEqual(splitHostPort("node.example", 50000), { host: "node.example", port: 50000 });
  assert.deepEqual(splitHostPort("[fd00::1]", 50000), { host: "fd00::1", port: 50000 });
  assert.deepEqual(splitHostPort("fd00::1", 50000), { host: "fd00::1", port: 50000 });
  // A port named wins over the default.
  assert.deepEqual(splitHostPort("10.0.0.2:51000", 50000), { host: "10.0.0.2", port: 51000 });
  assert.throws(
    () => splitHostPort("10.0.0.2"),
    (e: unknown) => e instanceof InvalidInputError && e.message === 'address "10.0.0.2" has no port',
  );
  assert.throws(() => splitHostPort("fd00::1"), InvalidInputError);
});

test("joinHostPort writes what splitHostPort reads, IPv6 in brackets", () => {
  assert.equal(joinHostPort("fd00::1", 6443), "[fd00::1]:6443");
  assert.equal(joinHostPort("10.0.0.1", 6443), "10.0.0.1:6443");
  for (const host of ["10.0.0.1", "fd00::1", "node.example"])
    assert.deepEqual(splitHostPort(joinHostPort(host, 6443)), { host, port: 6443 });
});
