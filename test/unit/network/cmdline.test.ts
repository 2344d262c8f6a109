import assert from "node:assert/strict";
import { test } from "node:test";
import { cmdlineArgs, parseCmdlineNetworking } from "../../../agent/src/network/cmdline.js";

test("networking arguments from the kernel command line", () => {
  const c = parseCmdlineNetworking(
    'console=ttyS0 talos.platform=metal talos.hostname=node-7.lab.test talos.network.interface.ignore=eth2 talos.network.interface.ignore=eth3 ip=eth1:dhcp ip=dhcp ip=10.0.0.2::10.0.0.1:255.255.255.0::eth0:off vlan=eth0.5:eth0 quiet',
  );
  assert.equal(c.hostname, "node-7");
  assert.equal(c.domainname, "lab.test");
  assert.deepEqual(c.ignoreLinks, ["eth2", "eth3"]);
  assert.deepEqual(c.dhcpLinks, ["eth1"]);
  assert.deepEqual(c.unsupported, ["ip=10.0.0.2::10.0.0.1:255.255.255.0::eth0:off", "vlan=eth0.5:eth0"]);
});

test("quoted values keep their spaces out of the split", () => {
  assert.deepEqual(cmdlineArgs('a=1 b="x y" c'), [["a", "1"], ["b", "x y"], ["c", undefined]]);
  assert.equal(parseCmdlineNetworking("quiet").hostname, undefined);
});
