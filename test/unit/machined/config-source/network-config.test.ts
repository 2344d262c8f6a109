import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../../agent/src/errors.js";
import { nocloudDnsServers, splitFqdn } from "../../../../agent/src/machined/config-source/network-config.js";

test("network-config v1: the nameserver entries' addresses", () => {
  const v1 = `version: 1
config:
  - type: physical
    name: eth0
    mac_address: "52:54:00:12:34:56"
    subnets:
      - type: static
        address: 192.168.1.11/24
        gateway: 192.168.1.1
  - type: nameserver
    address: [192.168.1.1, "2001:db8::53"]
`;
  assert.deepEqual(nocloudDnsServers(v1), ["192.168.1.1", "2001:db8::53"]);
});

test("network-config v2 (with or without network:): every ethernet's and bond's nameservers", () => {
  const v2 = `network:
  version: 2
  ethernets:
    eth0:
      match: {macaddress: "52:54:00:12:34:56"}
      addresses: [10.0.0.5/24]
      gateway4: 10.0.0.1
      nameservers:
        addresses: [10.0.0.53]
  bonds:
    bond0:
      interfaces: [eth1, eth2]
      nameservers: {addresses: [1.1.1.1]}
`;
  assert.deepEqual(nocloudDnsServers(v2), ["10.0.0.53", "1.1.1.1"]);
  assert.deepEqual(nocloudDnsServers("version: 2\nethernets: {eth0: {dhcp4: true}}\n"), []);
  assert.deepEqual(nocloudDnsServers(undefined), []);
});

test("an unknown version or a nameserver that is no IP is refused, as Talos refuses them", () => {
  assert.throws(() => nocloudDnsServers("version: 3\n"), (e) => e instanceof InvalidInputError && e.message === "network-config metadata version=3 is not supported");
  assert.throws(() => nocloudDnsServers("version: 1\nconfig: [{type: nameserver, address: [dns.example]}]\n"), InvalidInputError);
});

test("a platform hostname splits at its first dot", () => {
  assert.deepEqual(splitFqdn("node-1.lab.example"), { hostname: "node-1", domainname: "lab.example" });
  assert.deepEqual(splitFqdn("node-1"), { hostname: "node-1", domainname: "" });
});
