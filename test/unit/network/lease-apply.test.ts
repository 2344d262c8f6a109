import assert from "node:assert/strict";
import { test } from "node:test";
import type { Lease } from "../../../agent/src/network/dhcp4/client.js";
import { leaseToOutput } from "../../../agent/src/network/dhcp4/lease.js";
import { operatorSpecs } from "../../../agent/src/network/operator-output.js";

function lease(over: Partial<Lease> = {}): Lease {
  return {
    address: "10.1.0.50",
    prefixLen: 24,
    serverId: "10.1.0.1",
    routers: ["10.1.0.1"],
    dnsServers: ["10.1.0.53"],
    ntpServers: [],
    classlessRoutes: [],
    leaseTime: 3600,
    renewalTime: 1800,
    rebindingTime: 3150,
    acquiredAt: 0,
    ...over,
  };
}

test("router option: default route with metric 1024, source and protocol boot", () => {
  const out = leaseToOutput("eth0", lease());
  assert.deepEqual(out.addresses, [{ linkName: "eth0", address: "10.1.0.50", prefixLen: 24, broadcast: "+" }]);
  assert.equal(out.routes.length, 1);
  assert.deepEqual(out.routes[0], {
    family: 4,
    dst: "",
    dstLen: 0,
    gateway: "10.1.0.1",
    src: "10.1.0.50",
    outLinkName: "eth0",
    table: 254,
    priority: 1024,
    scope: 0,
    type: 1,
    protocol: 3,
  });
});

test("a gateway outside the subnet gets a link route to reach it", () => {
  const out = leaseToOutput("eth0", lease({ prefixLen: 32, routers: ["10.1.0.1"] }), { routeMetric: 100 });
  assert.deepEqual(
    out.routes.map((r) => [r.dst, r.dstLen, r.gateway, r.scope, r.priority]),
    [
      ["", 0, "10.1.0.1", 0, 100],
      ["10.1.0.1", 32, "", 253, 100],
    ],
  );
});

test("classless static routes replace the router option (RFC 3442)", () => {
  const out = leaseToOutput(
    "eth0",
    lease({
      classlessRoutes: [
        { dst: "192.168.0.0", dstLen: 16, gateway: "10.1.0.9" },
        { dst: "10.1.0.0", dstLen: 24, gateway: "0.0.0.0" },
      ],
    }),
  );
  assert.deepEqual(
    out.routes.map((r) => [r.dst, r.dstLen, r.gateway, r.scope]),
    [
      ["192.168.0.0", 16, "10.1.0.9", 0],
      ["10.1.0.0", 24, "", 253],
    ],
  );
});

test("hostname, domain and MTU", () => {
  assert.deepEqual(leaseToOutput("eth0", lease({ hostname: "n1.a.test" })).hostname, {
    hostname: "n1",
    domainname: "a.test",
  });
  assert.deepEqual(leaseToOutput("eth0", lease({ hostname: "n1.a.test", domainName: "b.test" })).hostname, {
    hostname: "n1",
    domainname: "b.test",
  });
  assert.equal(leaseToOutput("eth0", lease({ mtu: 1450 })).mtu, 1450);
  assert.equal(leaseToOutput("eth0", lease({ mtu: 20 })).mtu, undefined, "nonsense MTU ignored");
});

test("a lease's operator-layer specs: ids dhcp4/<link>/<id>, Talos's shapes", () => {
  const out = leaseToOutput("eth0", lease({ mtu: 1450 }));
  const specs = operatorSpecs("dhcp4/eth0", "eth0", out);
  assert.deepEqual(specs.addresses, [
    [
      "dhcp4/eth0/eth0/10.1.0.50/24",
      {
        address: "10.1.0.50/24",
        linkName: "eth0",
        family: "inet4",
        scope: "global",
        flags: "permanent",
        layer: "operator",
      },
    ],
  ]);
  assert.deepEqual(specs.routes, [
    [
      "dhcp4/eth0/inet4/10.1.0.1//1024",
      {
        family: "inet4",
        dst: "",
        src: "10.1.0.50",
        gateway: "10.1.0.1",
        outLinkName: "eth0",
        table: "main",
        priority: 1024,
        scope: "global",
        type: "unicast",
        flags: "",
        protocol: "boot",
        layer: "operator",
      },
    ],
  ]);
  assert.deepEqual(specs.links, [
    [
      "dhcp4/eth0/eth0",
      { name: "eth0", logical: false, up: true, mtu: 1450, kind: "", type: "ether", layer: "operator" },
    ],
  ]);
});
