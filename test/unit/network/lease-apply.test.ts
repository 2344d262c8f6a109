import assert from "node:assert/strict";
import { test } from "node:test";
import type { Lease } from "../../../agent/src/network/dhcp4/client.js";
import { leaseToOutput } from "../../../agent/src/network/dhcp4/lease.js";
import { OperatorKernelApplier } from "../../../agent/src/network/operator-output.js";
import { FakeNetKernel } from "../../../agent/src/sys/net-fake.js";

function lease(over: Partial<Lease> = {}): Lease {
  return {
    address: "10.1.0.50", prefixLen: 24, serverId: "10.1.0.1", routers: ["10.1.0.1"], dnsServers: ["10.1.0.53"], ntpServers: [],
    classlessRoutes: [], leaseTime: 3600, renewalTime: 1800, rebindingTime: 3150, acquiredAt: 0, ...over,
  };
}

test("router option: default route with metric 1024, source and protocol boot", () => {
  const out = leaseToOutput("eth0", lease());
  assert.deepEqual(out.addresses, [{ linkName: "eth0", address: "10.1.0.50", prefixLen: 24, broadcast: "+" }]);
  assert.equal(out.routes.length, 1);
  assert.deepEqual(out.routes[0], {
    family: 4, dst: "", dstLen: 0, gateway: "10.1.0.1", src: "10.1.0.50", outLinkName: "eth0", table: 254, priority: 1024, scope: 0, type: 1, protocol: 3,
  });
});

test("a gateway outside the subnet gets a link route to reach it", () => {
  const out = leaseToOutput("eth0", lease({ prefixLen: 32, routers: ["10.1.0.1"] }), { routeMetric: 100 });
  assert.deepEqual(out.routes.map((r) => [r.dst, r.dstLen, r.gateway, r.scope, r.priority]), [["", 0, "10.1.0.1", 0, 100], ["10.1.0.1", 32, "", 253, 100]]);
});

test("classless static routes replace the router option (RFC 3442)", () => {
  const out = leaseToOutput("eth0", lease({ classlessRoutes: [{ dst: "192.168.0.0", dstLen: 16, gateway: "10.1.0.9" }, { dst: "10.1.0.0", dstLen: 24, gateway: "0.0.0.0" }] }));
  assert.deepEqual(out.routes.map((r) => [r.dst, r.dstLen, r.gateway, r.scope]), [["192.168.0.0", 16, "10.1.0.9", 0], ["10.1.0.0", 24, "", 253]]);
});

test("hostname, domain and MTU", () => {
  assert.deepEqual(leaseToOutput("eth0", lease({ hostname: "n1.a.test" })).hostname, { hostname: "n1", domainname: "a.test" });
  assert.deepEqual(leaseToOutput("eth0", lease({ hostname: "n1.a.test", domainName: "b.test" })).hostname, { hostname: "n1", domainname: "b.test" });
  assert.equal(leaseToOutput("eth0", lease({ mtu: 1450 })).mtu, 1450);
  assert.equal(leaseToOutput("eth0", lease({ mtu: 20 })).mtu, undefined, "nonsense MTU ignored");
});

test("the applier replaces what a changed lease no longer asks for and leaves other links alone", async () => {
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth0", up: true });
  kernel.addLink({ name: "eth1", up: true });
  const applier = new OperatorKernelApplier(kernel);
  await applier.apply("dhcp4/eth1", "eth1", leaseToOutput("eth1", lease({ address: "10.2.0.7", routers: ["10.2.0.1"] })));
  await applier.apply("dhcp4/eth0", "eth0", leaseToOutput("eth0", lease({ mtu: 1400 })));
  assert.equal(kernel.links.find((l) => l.name === "eth0")!.mtu, 1400);
  const defaults = () => kernel.routes.filter((r) => r.dstLen === 0).map((r) => `${r.outLinkName} ${r.gateway}`).sort();
  assert.deepEqual(defaults(), ["eth0 10.1.0.1", "eth1 10.2.0.1"]);

  await applier.apply("dhcp4/eth0", "eth0", leaseToOutput("eth0", lease({ address: "10.1.0.51", routers: ["10.1.0.254"] })));
  assert.deepEqual(kernel.addresses.filter((a) => a.family === 4 && a.linkName === "eth0").map((a) => a.address), ["10.1.0.51"]);
  assert.deepEqual(defaults(), ["eth0 10.1.0.254", "eth1 10.2.0.1"]);

  await applier.remove("dhcp4/eth0");
  assert.deepEqual(kernel.addresses.filter((a) => a.family === 4 && a.linkName === "eth0"), []);
  assert.deepEqual(defaults(), ["eth1 10.2.0.1"]);
});
