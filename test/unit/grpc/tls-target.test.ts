// One split of an address into host and port (sys/host-port.ts) serves the endpoint's port, the TLS
// identity and apid's tls.connect options alike: IPv6 in brackets, and apid's port when none is named.
import assert from "node:assert/strict";
import { test } from "node:test";
import { addressContainsPort, apidPort, tlsConnectOptions, withPort } from "../../../agent/src/grpc/tls-target.js";

const mtls = { kind: "mtls" as const, ca: "CA", crt: "CRT", key: "KEY" };

test("withPort and tlsConnectOptions read an address as splitHostPort does, apid's port when none is named", () => {
  assert.equal(apidPort, 50000);
  for (const [address, host, port, servername] of [
    ["10.0.0.2:51000", "10.0.0.2", 51000, "node.basalt.invalid"],
    ["node.example:50000", "node.example", 50000, "node.example"],
    ["[fd00::1]:50000", "fd00::1", 50000, "node.basalt.invalid"],
    ["10.0.0.2", "10.0.0.2", 50000, "node.basalt.invalid"],
  ] as const) {
    const o = tlsConnectOptions(address, mtls);
    assert.deepEqual([o.host, o.port, o.servername], [host, port, servername], address);
  }
  assert.equal(withPort("[fd00::1]"), "[fd00::1]:50000");
  assert.equal(withPort("node.example:7"), "node.example:7");
});

test("a port in an address as Go's SplitHostPort finds one; a bare or bracketed IPv6 address alone has none", () => {
  for (const a of [
    "10.0.0.2:50000",
    "node.example:50000",
    "[fd00::1]:50000",
    "[fe80::1%eth0]:1",
    "node:",
    ":50000",
    "[node]:50000",
  ])
    assert.equal(addressContainsPort(a), true, a);
  for (const a of [
    "10.0.0.2",
    "node.example",
    "fd00::1",
    "[fd00::1]",
    "[fd00::1]x:5",
    "a:b:c",
    "[fd00::zz]:50000",
    "no]de:50000",
    "[a[b]:50000",
  ])
    assert.equal(addressContainsPort(a), false, a);
});
