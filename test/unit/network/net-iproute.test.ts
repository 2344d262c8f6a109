import assert from "node:assert/strict";
import { test } from "node:test";
import { parseAddresses, parseLinks, parseRoutes } from "../../../agent/src/sys/net-iproute.js";

// Shapes as iproute2 6.1 prints them with -j.
const links = [
  { ifindex: 1, ifname: "lo", flags: ["LOOPBACK", "UP", "LOWER_UP"], mtu: 65536, qdisc: "noqueue", operstate: "UNKNOWN", link_type: "loopback", address: "00:00:00:00:00:00", broadcast: "00:00:00:00:00:00" },
  { ifindex: 4, ifname: "eth0", flags: ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], mtu: 1400, qdisc: "pfifo_fast", operstate: "UP", link_type: "ether", address: "02:fc:00:00:00:01", broadcast: "ff:ff:ff:ff:ff:ff", permaddr: "02:fc:00:00:00:99", master: "br0" },
  { ifindex: 6, link_index: 5, ifname: "va", flags: ["BROADCAST", "MULTICAST", "M-DOWN"], mtu: 1500, qdisc: "noop", operstate: "DOWN", link_type: "ether", address: "f2:23:93:42:b5:64", broadcast: "ff:ff:ff:ff:ff:ff", linkinfo: { info_kind: "veth" } },
  { ifindex: 7, ifname: "br0", flags: ["BROADCAST", "UP"], mtu: 1500, operstate: "DOWN", link_type: "ether", address: "02:00:00:00:00:07", linkinfo: { info_kind: "bridge" } },
];

test("links: names become kernel numbers, RUNNING is restored", () => {
  const [lo, eth0, va, br0] = parseLinks(links);
  assert.equal(lo!.type, 772);
  assert.equal(lo!.flags, 0x1 | 0x8 | 0x40 | 0x10000, "UP+RUNNING for an operationally unknown loopback");
  assert.equal(lo!.operState, 0);
  assert.equal(eth0!.type, 1);
  assert.equal(eth0!.flags, 0x1 | 0x2 | 0x40 | 0x1000 | 0x10000);
  assert.equal(eth0!.operState, 6);
  assert.equal(eth0!.carrier, true);
  assert.equal(eth0!.permanentAddr, "02:fc:00:00:00:99");
  assert.equal(eth0!.masterIndex, 7);
  assert.equal(eth0!.kind, "");
  assert.equal(va!.kind, "veth");
  assert.equal(va!.linkIndex, 5);
  assert.equal(va!.flags & 0x40, 0, "not RUNNING when down");
  assert.equal(va!.carrier, false);
  assert.equal(br0!.flags & 0x40, 0, "UP but operationally down: not RUNNING");
});

test("addresses: IFA_F_PERMANENT unless dynamic, IPv6 has no local", () => {
  const rows = [
    {
      ifindex: 4, ifname: "eth0",
      addr_info: [
        { family: "inet", local: "10.0.0.2", prefixlen: 24, broadcast: "10.0.0.255", scope: "global", label: "eth0" },
        { family: "inet", local: "10.0.0.9", prefixlen: 24, scope: "global", dynamic: true, noprefixroute: true },
        { family: "inet6", local: "fe80::1", prefixlen: 64, scope: "link", tentative: true },
      ],
    },
  ];
  const [a, b, c] = parseAddresses(rows);
  assert.deepEqual(a, { linkIndex: 4, linkName: "eth0", family: 4, address: "10.0.0.2", prefixLen: 24, local: "10.0.0.2", broadcast: "10.0.0.255", scope: 0, flags: 0x80 });
  assert.equal(b!.flags, 0x200);
  assert.equal(c!.family, 6);
  assert.equal(c!.local, "");
  assert.equal(c!.scope, 253);
  assert.equal(c!.flags, 0x80 | 0x40);
});

test("routes: defaults for fields iproute2 leaves out", () => {
  const rows = [
    { dst: "default", gateway: "10.0.0.1", dev: "eth0", protocol: "dhcp", prefsrc: "10.0.0.2", metric: 1024, flags: [], family: "inet" },
    { dst: "10.10.0.0/24", dev: "eth0", scope: "link", metric: 5, flags: ["onlink"], metrics: [{ mtu: 1300 }], family: "inet" },
    { type: "local", dst: "10.0.0.2", dev: "eth0", table: "local", protocol: "kernel", scope: "host", prefsrc: "10.0.0.2", flags: [], family: "inet" },
    { dst: "fe80::/64", dev: "eth0", protocol: "kernel", metric: 256, flags: [], pref: "medium", family: "inet6" },
    { dst: "10.20.0.0/16", dev: "eth0", table: "100", flags: [], family: "inet" },
  ];
  const [def, onlink, local, v6, custom] = parseRoutes(rows, new Map([["eth0", 4]]));
  assert.deepEqual(def, { family: 4, table: 254, dst: "", dstLen: 0, src: "10.0.0.2", gateway: "10.0.0.1", outLinkIndex: 4, outLinkName: "eth0", priority: 1024, scope: 0, type: 1, protocol: 16, flags: 0, mtu: 0 });
  assert.equal(onlink!.protocol, 3, "no proto printed means boot");
  assert.equal(onlink!.flags, 4);
  assert.equal(onlink!.mtu, 1300);
  assert.equal(onlink!.scope, 253);
  assert.equal(local!.table, 255);
  assert.equal(local!.type, 2);
  assert.equal(local!.dstLen, 32, "host route without a prefix length");
  assert.equal(v6!.family, 6);
  assert.equal(v6!.dstLen, 64);
  assert.equal(custom!.table, 100);
});

test("sysfs link facts: driver, PCI bus path and id, speed, duplex", async (t) => {
  const { mkdtemp, mkdir, writeFile, symlink, rm } = await import("node:fs/promises");
  const os = await import("node:os");
  const path = await import("node:path");
  const { sysfsLinkInfo } = await import("../../../agent/src/sys/net-sysfs.js");
  const root = await mkdtemp(path.join(os.tmpdir(), "basalt-sysfs-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const pci = path.join(root, "devices", "pci0000:00", "0000:00:03.0");
  await mkdir(path.join(pci, "virtio2"), { recursive: true });
  await writeFile(path.join(pci, "vendor"), "0x1af4\n");
  await writeFile(path.join(pci, "device"), "0x1041\n");
  await mkdir(path.join(root, "bus", "virtio", "drivers", "virtio_net"), { recursive: true });
  await symlink(path.join(root, "bus", "virtio", "drivers", "virtio_net"), path.join(pci, "virtio2", "driver"));
  const net = path.join(root, "class", "net", "eth0");
  await mkdir(net, { recursive: true });
  await symlink(path.join(pci, "virtio2"), path.join(net, "device"));
  await writeFile(path.join(net, "speed"), "1000\n");
  await writeFile(path.join(net, "duplex"), "full\n");
  const vnet = path.join(root, "class", "net", "veth0");
  await mkdir(vnet, { recursive: true });
  await writeFile(path.join(vnet, "speed"), "-1\n");
  const read = sysfsLinkInfo(root);
  assert.deepEqual(await read("eth0"), { driver: "virtio_net", busPath: "0000:00:03.0", pciID: "1AF4:1041", speedMbit: 1000, duplex: 1 });
  assert.deepEqual(await read("veth0"), { duplex: 255 });
});
