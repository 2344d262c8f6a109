import assert from "node:assert/strict";
import { test } from "node:test";
import { cmdlineArgs, parseCmdlineNetworking } from "../../../agent/src/network/cmdline.js";

test("networking arguments from the kernel command line", () => {
  const c = parseCmdlineNetworking(
    "console=ttyS0 talos.platform=metal talos.hostname=node-7.lab.test talos.network.interface.ignore=eth2 talos.network.interface.ignore=eth3 ip=eth1:dhcp ip=dhcp ip=10.0.0.2::10.0.0.1:255.255.255.0::eth0:off vlan=eth0.5:eth0 quiet",
  );
  assert.equal(c.hostname, "node-7");
  assert.equal(c.domainname, "lab.test");
  assert.deepEqual(c.ignoreLinks, ["eth2", "eth3"]);
  assert.deepEqual(c.dhcpLinks, ["eth1"]);
  assert.deepEqual(c.static, [{ device: "eth0", address: "10.0.0.2", prefixLen: 24, gateway: "10.0.0.1" }]);
  assert.deepEqual(c.vlans, [{ name: "eth0.5", parent: "eth0", vlanId: 5 }]);
  assert.deepEqual(c.unsupported, []);
});

test("ip= full syntax: hostname (talos.hostname= wins), DNS, NTP, prefix length or netmask, autoconf dhcp, IPv6 in brackets", () => {
  const c = parseCmdlineNetworking(
    "ip=192.168.1.10::192.168.1.1:22:host-a.example:enp1s0:none:192.168.1.53:9.9.9.9:192.168.1.123 net.ifnames=0 bond=bond0:eth0,eth1:mode=fastest",
  );
  assert.deepEqual(c.static, [{ device: "enp1s0", address: "192.168.1.10", prefixLen: 22, gateway: "192.168.1.1" }]);
  assert.equal(c.hostname, "host-a");
  assert.equal(c.domainname, "example");
  assert.deepEqual(c.dnsServers, ["192.168.1.53", "9.9.9.9"]);
  assert.deepEqual(c.timeServers, ["192.168.1.123"]);
  assert.deepEqual(c.unsupported, ["bond=bond0:eth0,eth1:mode=fastest"]);
  assert.deepEqual(
    parseCmdlineNetworking("bond=bond1:eth3,eth4:mode=802.3ad,xmit_hash_policy=layer3+4,lacp_rate=fast,miimon=100:9000")
      .bond,
    {
      name: "bond1",
      members: ["eth3", "eth4"],
      options: { mode: "802.3ad", xmitHashPolicy: "layer3+4", lacpRate: "fast", miimon: 100 },
      mtu: 9000,
    },
  );
  assert.deepEqual(parseCmdlineNetworking("bond=bond0").bond, {
    name: "bond0",
    members: ["eth0", "eth1"],
    options: {},
    mtu: 0,
  });
  assert.equal(parseCmdlineNetworking("ip=10.1.1.1::::h1:eth0:dhcp talos.hostname=h2").hostname, "h2");
  assert.deepEqual(parseCmdlineNetworking("ip=10.1.1.1::::h1:eth0:dhcp").dhcpLinks, ["eth0"]);
  assert.deepEqual(parseCmdlineNetworking("ip=[fd00::5]::[fd00::1]:64::eth0:off").static, [
    { device: "eth0", address: "fd00::5", prefixLen: 64, gateway: "fd00::1" },
  ]);
});

test("quoted values keep their spaces out of the split", () => {
  assert.deepEqual(cmdlineArgs('a=1 b="x y" c'), [
    ["a", "1"],
    ["b", "x y"],
    ["c", undefined],
  ]);
  assert.equal(parseCmdlineNetworking("quiet").hostname, undefined);
});
