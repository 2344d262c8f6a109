// The default, cmdline and configuration layers derived from links, kernel arguments
// and .machine.network (network/config-specs.ts).

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseCmdlineNetworking } from "../../../agent/src/network/cmdline.js";
import { type KnownLink, layeredSpecs } from "../../../agent/src/network/config-specs.js";
import type { Bond } from "../../../agent/src/config/types/v1alpha1.js";

const link = (name: string, index: number, over: Partial<KnownLink["spec"]> = {}): KnownLink => ({
  name,
  spec: {
    index,
    type: "ether",
    kind: "",
    hardwareAddr: `52:54:00:00:00:0${index}`,
    permanentAddr: `52:54:00:00:00:0${index}`,
    busPath: `0000:00:0${index}.0`,
    driver: "virtio_net",
    ...over,
  },
});
const links = [
  link("lo", 1, { type: "loopback" }),
  link("eth0", 2),
  link("eth1", 3),
  link("eth2", 4),
  link("veth7", 5, { kind: "veth" }),
];

test("no config: lo and every physical link up, DHCPv4 on the physical links, ignored links left out", () => {
  const l = layeredSpecs(undefined, links, parseCmdlineNetworking("talos.network.interface.ignore=eth2"));
  assert.deepEqual(
    l.links.map((x) => `${x.layer}/${x.name}`),
    ["default/lo", "default/eth0", "default/eth1"],
  );
  assert.deepEqual(
    l.dhcp4.map((d) => `${d.layer}/${d.linkName}/${d.routeMetric}`),
    ["default/eth0/1024", "default/eth1/1024"],
  );
  assert.deepEqual(
    l.addresses.map((a) => `${a.layer}/${a.linkName}/${a.address}/${a.scope}`),
    ["default/lo/127.0.0.1/8/host"],
  );
  assert.deepEqual([...l.ignored], ["eth2"]);
});

test("cmdline ip= static: address, default route and link on the cmdline layer; no default DHCP there", () => {
  const l = layeredSpecs(
    undefined,
    links,
    parseCmdlineNetworking(
      "ip=10.0.0.5::10.0.0.1:255.255.255.0::eth1:off vlan=eth0.30:eth0 bond=bond7:eth2:mode=active-backup",
    ),
  );
  assert.deepEqual(
    l.addresses.filter((a) => a.layer === "cmdline").map((a) => `${a.linkName}/${a.address}`),
    ["eth1/10.0.0.5/24"],
  );
  assert.deepEqual(
    l.routes.map(
      (r) => `${r.layer} ${r.dst || "default"} via ${r.gateway} ${r.outLinkName} ${r.priority} ${r.protocol}`,
    ),
    ["cmdline default via 10.0.0.1 eth1 1024 static"],
  );
  assert.deepEqual(
    l.dhcp4.map((d) => d.linkName),
    ["eth0"],
    "eth1 is configured by ip=, eth2 by bond=; eth0 keeps default DHCP",
  );
  const bond = l.links.find((x) => x.name === "bond7")!;
  assert.deepEqual([bond.kind, bond.layer, bond.bondMaster?.mode], ["bond", "cmdline", "active-backup"]);
  assert.deepEqual(
    l.links.find((x) => x.name === "eth2" && x.layer === "cmdline"),
    {
      name: "eth2",
      logical: false,
      up: true,
      mtu: 0,
      kind: "",
      type: "ether",
      masterName: "bond7",
      slaveIndex: 0,
      layer: "cmdline",
    },
  );
  assert.deepEqual(
    l.links.find((x) => x.name === "eth0.30"),
    {
      name: "eth0.30",
      logical: true,
      up: true,
      mtu: 0,
      kind: "vlan",
      type: "ether",
      parentName: "eth0",
      vlan: { vlanID: 30, vlanProtocol: "802.1q" },
      layer: "cmdline",
    },
  );
});

test("machine config: deviceSelector, bond with members, vlan with its address and DHCP, routes with metric and source, ignore", () => {
  const l = layeredSpecs(
    {
      interfaces: [
        {
          deviceSelector: { hardwareAddr: "52:54:00:00:00:04" },
          addresses: ["192.168.5.2/24"],
          mtu: 9000,
          routes: [{ network: "10.50.0.0/16", gateway: "192.168.5.1", source: "192.168.5.2", metric: 50 }],
        },
        {
          interface: "bond0",
          bond: { interfaces: ["eth0", "eth1"], mode: "active-backup", miimon: 100, primary: "eth1" },
          vlans: [{ vlanId: 100, addresses: ["172.16.0.2/24"], dhcp: true, dhcpOptions: { routeMetric: 300 } }],
        },
        { interface: "veth7", ignore: true },
      ],
    },
    links,
    parseCmdlineNetworking(""),
  );
  const byName = new Map(l.links.map((x) => [x.name, x]));
  assert.equal(byName.get("eth2")!.mtu, 9000);
  assert.deepEqual(byName.get("bond0")!.bondMaster, {
    mode: "active-backup",
    xmitHashPolicy: "layer2",
    lacpRate: "slow",
    arpValidate: "none",
    arpAllTargets: "any",
    primary: 3,
    primaryReselect: "always",
    failOverMac: "none",
    miimon: 100,
    resendIgmp: 1,
    lpInterval: 1,
    packetsPerSlave: 1,
    numPeerNotif: 1,
    tlbLogicalLb: 1,
    useCarrier: true,
  });
  assert.deepEqual(
    Object.keys(byName.get("bond0")!.bondMaster!).slice(0, 6),
    ["mode", "xmitHashPolicy", "lacpRate", "arpValidate", "arpAllTargets", "primary"],
    "Talos's key order",
  );
  assert.deepEqual(
    [byName.get("eth0")!.masterName, byName.get("eth0")!.slaveIndex, byName.get("eth1")!.slaveIndex],
    ["bond0", 0, 1],
  );
  assert.equal(byName.get("bond0.100")!.parentName, "bond0");
  assert.deepEqual(
    l.addresses.filter((a) => a.layer === "configuration").map((a) => `${a.linkName}/${a.address}`),
    ["eth2/192.168.5.2/24", "bond0.100/172.16.0.2/24"],
  );
  assert.deepEqual(
    l.routes.map((r) => `${r.dst} via ${r.gateway} src ${r.src} ${r.outLinkName} ${r.priority}`),
    ["10.50.0.0/16 via 192.168.5.1 src 192.168.5.2 eth2 50"],
  );
  assert.deepEqual(
    l.dhcp4.map((d) => `${d.layer}/${d.linkName}/${d.routeMetric}`),
    ["configuration/bond0.100/300"],
  );
  assert.equal(byName.has("veth7"), false);
  assert.ok(l.ignored.has("veth7"));
  assert.throws(
    () =>
      layeredSpecs(
        { interfaces: [{ interface: "bond1", bond: { mode: "fastest" } }] },
        links,
        parseCmdlineNetworking(""),
      ),
    /unknown bond mode "fastest"/,
  );
});

test("machine config bonds get Talos's FillDefaults: zero counts become 1, tlb_dynamic_lb and the 802.3ad system priority are forced", () => {
  const bondOf = (bond: Bond) =>
    layeredSpecs({ interfaces: [{ interface: "bond0", bond }] }, links, parseCmdlineNetworking("")).links.find(
      (l) => l.name === "bond0",
    )!.bondMaster!;
  // 802.3ad: Talos overrides adActorSysPrio and tlbDynamicLb; keeps the counts the config gives.
  const lacp = bondOf({
    interfaces: ["eth0", "eth1"],
    mode: "802.3ad",
    lacpRate: "fast",
    miimon: 100,
    updelay: 200,
    downdelay: 200,
    resendIgmp: 3,
    adActorSysPrio: 100,
    tlbDynamicLb: 0,
  });
  assert.deepEqual(
    Object.entries(lacp),
    Object.entries({
      mode: "802.3ad",
      xmitHashPolicy: "layer2",
      lacpRate: "fast",
      arpValidate: "none",
      arpAllTargets: "any",
      primaryReselect: "always",
      failOverMac: "none",
      miimon: 100,
      updelay: 200,
      downdelay: 200,
      resendIgmp: 3,
      lpInterval: 1,
      packetsPerSlave: 1,
      numPeerNotif: 1,
      tlbLogicalLb: 1,
      useCarrier: true,
      adActorSysPrio: 65535,
    }),
    "values and Talos's key order",
  );
  // balance-alb: tlb_dynamic_lb is the config's (absent: zero); no system priority; use_carrier off when asked.
  const alb = bondOf({ interfaces: ["eth0"], mode: "balance-alb", useCarrier: false, packetsPerSlave: 0 });
  assert.deepEqual(alb, {
    mode: "balance-alb",
    xmitHashPolicy: "layer2",
    lacpRate: "slow",
    arpValidate: "none",
    arpAllTargets: "any",
    primaryReselect: "always",
    failOverMac: "none",
    resendIgmp: 1,
    lpInterval: 1,
    packetsPerSlave: 1,
    numPeerNotif: 1,
  });
  // The command line's bond= gets the same.
  const cmd = layeredSpecs(undefined, links, parseCmdlineNetworking("bond=bond1:eth0,eth1:mode=balance-rr")).links.find(
    (l) => l.name === "bond1",
  )!.bondMaster!;
  assert.deepEqual(
    [cmd.resendIgmp, cmd.lpInterval, cmd.packetsPerSlave, cmd.numPeerNotif, cmd.tlbLogicalLb, cmd.adActorSysPrio],
    [1, 1, 1, 1, 1, undefined],
  );
});
