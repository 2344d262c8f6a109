// nocloud network-config v1 and v2 samples (shaped like the ones cloud-init documents
// and Proxmox/OpenStack write) into platform-layer specs, as Talos 1.7's nocloud reads them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import type { KnownLink } from "../../../agent/src/network/config-specs.js";
import { nocloudNetworkSpecs, parseNocloudNetwork } from "../../../agent/src/network/nocloud-network.js";

const link = (name: string, mac: string, index: number): KnownLink => ({
  name,
  spec: { index, type: "ether", kind: "", hardwareAddr: mac, permanentAddr: mac },
});
const LINKS = [
  link("lo", "00:00:00:00:00:00", 1),
  link("enp1s0", "52:54:00:aa:00:01", 2),
  link("enp2s0", "52:54:00:aa:00:02", 3),
  link("enp3s0", "52:54:00:aa:00:03", 4),
];

const addr = (linkName: string, address: string) => ({
  address,
  linkName,
  family: address.includes(":") ? "inet6" : "inet4",
  scope: "global",
  flags: "permanent",
  layer: "platform",
});
const route = (outLinkName: string, gateway: string, dst = "", table = "main") => ({
  family: gateway.includes(":") ? "inet6" : "inet4",
  dst,
  src: "",
  gateway,
  outLinkName,
  table,
  priority: gateway.includes(":") ? 2048 : 1024,
  scope: "global",
  type: "unicast",
  flags: "",
  protocol: "static",
  layer: "platform",
});
const up = (name: string, extra: object = {}) => ({
  name,
  logical: false,
  up: true,
  mtu: 0,
  kind: "",
  type: "ether",
  ...extra,
  layer: "platform",
});

const V1 = `version: 1
config:
  - type: physical
    name: eth0
    mac_address: "52:54:00:AA:00:02"
    subnets:
      - type: static
        address: 192.168.40.11
        netmask: 255.255.255.0
        gateway: 192.168.40.1
      - type: static6
        address: "2001:db8:40::11/64"
        gateway: "2001:db8:40::1"
  - type: physical
    name: eth1
    subnets:
      - type: dhcp
      - type: ipv6_dhcpv6-stateful
  - type: physical
    name: eth9
    mac_address: "52:54:00:ff:ff:ff"
  - type: bond
    name: bond7
  - type: nameserver
    address: [192.168.40.53, "2001:db8:40::53"]
    search: [lab.example]
`;

test("v1: physical links by MAC (else their name), static addresses with netmask or CIDR, gateways, DHCPv4/v6 and nameservers; bond entries are not read (as Talos)", () => {
  const config = parseNocloudNetwork(V1)!;
  assert.deepEqual(nocloudNetworkSpecs(config, LINKS), {
    links: [up("enp2s0"), up("eth1"), up("eth9")],
    addresses: [addr("enp2s0", "192.168.40.11/24"), addr("enp2s0", "2001:db8:40::11/64")],
    routes: [route("enp2s0", "192.168.40.1"), route("enp2s0", "2001:db8:40::1")],
    operators: [
      { operator: "dhcp4", linkName: "eth1", requireUp: true, dhcp4: { routeMetric: 1024 }, layer: "platform" },
      { operator: "dhcp6", linkName: "eth1", requireUp: true, dhcp6: { routeMetric: 2048 }, layer: "platform" },
    ],
    dnsServers: ["192.168.40.53", "2001:db8:40::53"],
  });
  // Before the link with that MAC exists, the config's own name is used.
  assert.equal(nocloudNetworkSpecs(config, []).links[0]!.name, "eth0");
});

const V2 = `network:
  version: 2
  ethernets:
    uplink:
      match:
        macaddress: "52:54:00:aa:00:01"
      dhcp4: true
      addresses: [10.20.0.5/24, "fd20::5/64"]
      gateway4: 10.20.0.1
      gateway6: "fd20::1"
      mtu: 9000
      nameservers:
        search: [lab.example]
        addresses: [10.20.0.53]
    m1:
      match: {macaddress: "52:54:00:aa:00:02"}
    m2:
      match: {macaddress: "52:54:00:aa:00:03"}
      dhcp6: true
  bonds:
    bond0:
      interfaces: [m1, m2]
      mtu: 1500
      parameters:
        mode: 802.3ad
        lacp-rate: fast
        transmit-hash-policy: layer3+4
        mii-monitor-interval: 100
        up-delay: 200
        down-delay: 200
      addresses: [172.16.8.10/29]
      nameservers:
        addresses: [9.9.9.9]
      routes:
        - to: 172.16.0.0/16
          via: 172.16.8.9
        - to: 0.0.0.0/0
          via: 172.16.8.9
          table: 100
`;

test("v2 (under network:): ethernets in name order matched by MAC, bond members, the bond with Talos's defaults, routes, DHCP and nameservers", () => {
  const config = parseNocloudNetwork(V2)!;
  assert.deepEqual(nocloudNetworkSpecs(config, LINKS), {
    links: [
      up("enp2s0", { masterName: "bond0", slaveIndex: 1 }),
      up("enp3s0", { masterName: "bond0", slaveIndex: 1 }),
      up("enp1s0", { mtu: 9000 }),
      {
        name: "bond0",
        logical: true,
        up: true,
        mtu: 1500,
        kind: "bond",
        type: "ether",
        bondMaster: {
          mode: "802.3ad",
          xmitHashPolicy: "layer3+4",
          lacpRate: "fast",
          arpValidate: "none",
          arpAllTargets: "any",
          primaryReselect: "always",
          failOverMac: "none",
          miimon: 100,
          updelay: 200,
          downdelay: 200,
          resendIgmp: 1,
          lpInterval: 1,
          packetsPerSlave: 1,
          numPeerNotif: 1,
          tlbLogicalLb: 1,
          adActorSysPrio: 65535,
        },
        layer: "platform",
      },
    ],
    addresses: [addr("enp1s0", "10.20.0.5/24"), addr("enp1s0", "fd20::5/64"), addr("bond0", "172.16.8.10/29")],
    routes: [
      route("enp1s0", "10.20.0.1"),
      route("enp1s0", "fd20::1"),
      route("bond0", "172.16.8.9", "172.16.0.0/16"),
      route("bond0", "172.16.8.9", "", "RoutingTable(100)"),
    ],
    operators: [
      { operator: "dhcp6", linkName: "enp3s0", requireUp: true, dhcp6: { routeMetric: 1024 }, layer: "platform" },
      { operator: "dhcp4", linkName: "enp1s0", requireUp: true, dhcp4: { routeMetric: 1024 }, layer: "platform" },
    ],
    dnsServers: ["10.20.0.53", "9.9.9.9"],
  });
});

test("no network-config is none; bad values are refused with the value named", () => {
  assert.equal(parseNocloudNetwork(undefined), undefined);
  assert.equal(parseNocloudNetwork("  \n"), undefined);
  assert.deepEqual(nocloudNetworkSpecs(parseNocloudNetwork("version: 2\n")!, LINKS), {
    links: [],
    addresses: [],
    routes: [],
    operators: [],
    dnsServers: [],
  });
  const refused = (text: string, message: string) =>
    assert.throws(
      () => parseNocloudNetwork(text),
      (e) => e instanceof InvalidInputError && e.message === message,
    );
  refused("version: 3\n", "network-config metadata version=3 is not supported");
  refused("- a\n", "network-config is not a YAML mapping");
  refused(
    "version: 1\nconfig: [{type: nameserver, address: [dns.example]}]\n",
    'network-config: not an IP address: "dns.example"',
  );
  refused(
    "version: 1\nconfig: [{type: physical, name: eth0, subnets: [{type: static, address: 10.0.0.2, netmask: 255.0.255.0}]}]\n",
    'network-config: not a netmask: "255.0.255.0"',
  );
  refused("version: 2\nethernets: {eth0: {addresses: [10.0.0.2]}}\n", 'network-config: not an IP prefix: "10.0.0.2"');
  refused("version: 2\nethernets: {eth0: {mtu: big}}\n", 'network-config: mtu is not a number: "big"');
  refused("version: 2\nethernets: {eth0: {routes: [{to: 10.1.0.0/16}]}}\n", 'network-config: not an IP address: ""');
  refused("version: 2\nbonds: {bond0: {parameters: {mode: fastest}}}\n", 'network-config: invalid bond mode "fastest"');
});
