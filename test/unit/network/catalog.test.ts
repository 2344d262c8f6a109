import assert from "node:assert/strict";
import { test } from "node:test";
import { decode } from "../../../agent/src/api/index.js";
import {
  addressStatusDefinition,
  linkSpecDefinition,
  linkStatusDefinition,
  netNames,
  netValues,
  networkStatusDefinition,
  nodeAddressDefinition,
  resolverStatusDefinition,
  routeId,
  routeStatusDefinition,
} from "../../../agent/src/resources/catalog/network.js";
import { encodeSpec, yamlSpec } from "../../../agent/src/resources/definitions.js";
import { addressStatusSpec } from "../../../agent/src/controllers/network/address-status.js";
import { linkStatusSpec } from "../../../agent/src/controllers/network/link-status.js";
import { routeStatusSpec } from "../../../agent/src/controllers/network/route-status.js";

test("aliases match Talos's for the status types", () => {
  assert.deepEqual(linkStatusDefinition.spec.aliases, ["link", "links", "linkstatus", "ls"]);
  assert.deepEqual(addressStatusDefinition.spec.aliases, ["address", "addresses", "addressstatus", "as"]);
  assert.deepEqual(routeStatusDefinition.spec.aliases, ["route", "routes", "routestatus", "rs"]);
  assert.deepEqual(resolverStatusDefinition.spec.aliases, ["resolvers", "resolverstatus", "rs"]);
  assert.deepEqual(nodeAddressDefinition.spec.aliases, ["nodeaddress", "na", "nas"]);
  assert.deepEqual(networkStatusDefinition.spec.aliases, ["netstatus", "netstatuses", "networkstatus", "ns"]);
});

test("kernel numbers map to Talos names and back", () => {
  assert.equal(netNames.linkType(1), "ether");
  assert.equal(netNames.linkType(772), "loopback");
  assert.equal(netNames.linkType(65534), "nohdr");
  assert.equal(netNames.linkType(12345), "LinkType(12345)");
  assert.equal(netValues.linkType("LinkType(12345)"), 12345);
  assert.equal(netNames.linkFlags(0x1 | 0x2 | 0x40 | 0x1000 | 0x10000), "UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP");
  assert.equal(netValues.linkFlags("UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP"), 0x11043);
  assert.equal(netNames.addressFlags(0x80), "permanent");
  assert.equal(netNames.addressFlags(0x80 | 0x200), "permanent,noprefixroute");
  assert.equal(netValues.addressFlags("permanent,noprefixroute"), 0x280);
  assert.equal(netNames.table(100), "RoutingTable(100)");
  assert.equal(netNames.operState(6), "up");
  assert.equal(netNames.family(4), "inet4");
  assert.equal(netNames.scope(253), "link");
  assert.equal(netNames.protocol(3), "boot");
  assert.throws(() => netValues.scope("galaxy"), /unknown Scope/);
});

// Go's yaml.v3 quotes strings that YAML 1.1 would read as base-60 numbers (all-digit MACs, PCI paths).
test("LinkStatus: YAML like Talos and proto with enum numbers", () => {
  const spec = linkStatusSpec(
    {
      index: 2,
      name: "eth0",
      type: 1,
      flags: 0x11043,
      mtu: 1500,
      hardwareAddr: "52:54:00:12:34:56",
      broadcastAddr: "ff:ff:ff:ff:ff:ff",
      permanentAddr: "52:54:00:12:34:56",
      operState: 6,
      kind: "",
      slaveKind: "",
      masterIndex: 0,
      linkIndex: 0,
      vlanId: 0,
      vlanProtocol: 0,
      queueDisc: "pfifo_fast",
      carrier: true,
    },
    { driver: "virtio_net", busPath: "0000:00:03.0" },
  );
  assert.equal(
    yamlSpec(linkStatusDefinition, spec),
    [
      "index: 2",
      "type: ether",
      "linkIndex: 0",
      "flags: UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP",
      'hardwareAddr: "52:54:00:12:34:56"',
      'permanentAddr: "52:54:00:12:34:56"',
      "broadcastAddr: ff:ff:ff:ff:ff:ff",
      "mtu: 1500",
      "queueDisc: pfifo_fast",
      "operationalState: up",
      'kind: ""',
      'slaveKind: ""',
      'busPath: "0000:00:03.0"',
      "driver: virtio_net",
      "linkState: true",
      "port: Other",
      "duplex: Unknown",
      "",
    ].join("\n"),
  );
  const p = decode("talos.resource.definitions.network.LinkStatusSpec", encodeSpec(linkStatusDefinition, spec));
  assert.equal(p.type, 1);
  assert.equal(p.flags, 0x11043);
  assert.equal(p.operational_state, 6);
  assert.deepEqual([...(p.hardware_addr as Buffer)], [0x52, 0x54, 0, 0x12, 0x34, 0x56]);
  assert.equal(p.port, 255);
  assert.equal(p.duplex, 255);
  assert.equal(p.driver, "virtio_net");
});

test("LinkStatus of a vlan on a bond member's master: masterIndex after queueDisc, vlan last (Talos's order)", () => {
  const spec = linkStatusSpec({
    index: 7,
    name: "bond0.100",
    type: 1,
    flags: 0x1003,
    mtu: 1500,
    hardwareAddr: "52:54:00:12:34:57",
    broadcastAddr: "ff:ff:ff:ff:ff:ff",
    permanentAddr: "52:54:00:12:34:57",
    operState: 6,
    kind: "vlan",
    slaveKind: "",
    masterIndex: 9,
    linkIndex: 5,
    vlanId: 100,
    vlanProtocol: 0x8100,
    queueDisc: "noqueue",
    carrier: true,
  });
  const keys = yamlSpec(linkStatusDefinition, spec)
    .split("\n")
    .map((l) => l.split(":")[0]);
  assert.deepEqual(keys.slice(keys.indexOf("queueDisc"), keys.indexOf("queueDisc") + 3), [
    "queueDisc",
    "masterIndex",
    "operationalState",
  ]);
  assert.match(yamlSpec(linkStatusDefinition, spec), /\nvlan:\n {4}vlanID: 100\n {4}vlanProtocol: 802\.1q\n$/);
  const p = decode("talos.resource.definitions.network.LinkStatusSpec", encodeSpec(linkStatusDefinition, spec));
  assert.deepEqual(p.vlan, { vid: 100, protocol: 0x8100 });
});

test("LinkStatus of a bond and a bridge: the kernel's settings as Talos decodes them (bondMaster, bridgeMaster only with STP: Go's omitempty)", () => {
  const base = {
    type: 1,
    flags: 0x1003,
    mtu: 1500,
    hardwareAddr: "52:54:00:12:34:57",
    broadcastAddr: "ff:ff:ff:ff:ff:ff",
    permanentAddr: "52:54:00:12:34:57",
    operState: 6,
    slaveKind: "",
    masterIndex: 0,
    linkIndex: 0,
    vlanId: 0,
    vlanProtocol: 0,
    queueDisc: "noqueue",
    carrier: true,
  };
  const member = { ...base, index: 3, name: "eth1", kind: "", slaveKind: "bond", masterIndex: 9 };
  const bond = {
    ...base,
    index: 9,
    name: "bond0",
    kind: "bond",
    bond: {
      mode: 1,
      xmitHashPolicy: 0,
      lacpRate: 0,
      arpValidate: 0,
      arpAllTargets: 0,
      primary: "eth1",
      primaryReselect: 0,
      failOverMac: 0,
      adSelect: 0,
      miimon: 100,
      updelay: 0,
      downdelay: 0,
      arpInterval: 0,
      resendIgmp: 1,
      minLinks: 0,
      lpInterval: 1,
      packetsPerSlave: 1,
      numPeerNotif: 1,
      tlbDynamicLb: 1,
      allSlavesActive: 0,
      useCarrier: true,
      adActorSysPrio: 0,
      adUserPortKey: 0,
      peerNotifyDelay: 0,
    },
  };
  const spec = linkStatusSpec(bond, {}, [member, bond]);
  assert.match(
    yamlSpec(linkStatusDefinition, spec),
    /\nduplex: Unknown\nbondMaster:\n {4}mode: active-backup\n {4}xmitHashPolicy: layer2\n {4}lacpRate: slow\n {4}arpValidate: none\n {4}arpAllTargets: any\n {4}primary: 3\n {4}primaryReselect: always\n {4}failOverMac: none\n {4}miimon: 100\n {4}resendIgmp: 1\n {4}lpInterval: 1\n {4}packetsPerSlave: 1\n {4}numPeerNotif: 1\n {4}tlbLogicalLb: 1\n {4}useCarrier: true\n$/,
  );
  const p = decode("talos.resource.definitions.network.LinkStatusSpec", encodeSpec(linkStatusDefinition, spec));
  assert.deepEqual(p.bond_master, {
    mode: 1,
    hash_policy: 0,
    lacp_rate: 0,
    arp_validate: 0,
    arp_all_targets: 0,
    primary_index: 3,
    primary_reselect: 0,
    fail_over_mac: 0,
    ad_select: 0,
    mii_mon: 100,
    up_delay: 0,
    down_delay: 0,
    arp_interval: 0,
    resend_igmp: 1,
    min_links: 0,
    lp_interval: 1,
    packets_per_slave: 1,
    num_peer_notif: 1,
    tlb_dynamic_lb: 1,
    all_slaves_active: 0,
    use_carrier: true,
    ad_actor_sys_prio: 0,
    ad_user_port_key: 0,
    peer_notify_delay: 0,
  });
  // A hash policy Talos has no name for (vlan+srcmac, 5) shows its number and travels as it.
  const odd = linkStatusSpec({ ...bond, bond: { ...bond.bond, xmitHashPolicy: 5 } }, {}, []);
  assert.equal(odd.bondMaster!.xmitHashPolicy, "5");
  assert.deepEqual(
    (
      decode("talos.resource.definitions.network.LinkStatusSpec", encodeSpec(linkStatusDefinition, odd))
        .bond_master as { hash_policy: number }
    ).hash_policy,
    5,
  );

  const bridge = { ...base, index: 10, name: "br0", kind: "bridge", bridge: { stp: true, vlanFiltering: false } };
  assert.match(
    yamlSpec(linkStatusDefinition, linkStatusSpec(bridge)),
    /\nbridgeMaster:\n {4}stp:\n {8}enabled: true\n$/,
  );
  assert.equal(
    yamlSpec(
      linkStatusDefinition,
      linkStatusSpec({ ...bridge, bridge: { stp: false, vlanFiltering: false } }),
    ).includes("bridgeMaster"),
    false,
  );
});

test("AddressStatus: omitempty fields and NetIPPrefix on the wire", () => {
  const spec = addressStatusSpec({
    linkIndex: 2,
    linkName: "eth0",
    family: 4,
    address: "10.5.0.2",
    prefixLen: 24,
    local: "10.5.0.2",
    broadcast: "10.5.0.255",
    scope: 0,
    flags: 0x80,
  });
  assert.equal(
    yamlSpec(addressStatusDefinition, spec),
    "address: 10.5.0.2/24\nlocal: 10.5.0.2\nbroadcast: 10.5.0.255\nlinkIndex: 2\nlinkName: eth0\nfamily: inet4\nscope: global\nflags: permanent\n",
  );
  const v6 = addressStatusSpec({
    linkIndex: 2,
    linkName: "eth0",
    family: 6,
    address: "fe80::1",
    prefixLen: 64,
    local: "",
    broadcast: "",
    scope: 253,
    flags: 0x80,
  });
  assert.equal(Object.hasOwn(v6, "local"), false);
  const p = decode("talos.resource.definitions.network.AddressStatusSpec", encodeSpec(addressStatusDefinition, spec));
  assert.deepEqual(p.address, { ip: Buffer.from([10, 5, 0, 2]), prefix_length: 24 });
  assert.equal(p.family, 2);
  assert.equal(p.flags, 0x80);
});

test("RouteStatus: default route YAML, id and proto", () => {
  const spec = routeStatusSpec({
    family: 4,
    table: 254,
    dst: "",
    dstLen: 0,
    src: "10.5.0.2",
    gateway: "10.5.0.1",
    outLinkIndex: 2,
    outLinkName: "eth0",
    priority: 1024,
    scope: 0,
    type: 1,
    protocol: 3,
    flags: 0,
    mtu: 0,
  });
  assert.equal(routeId(spec), "inet4/10.5.0.1//1024");
  assert.equal(
    yamlSpec(routeStatusDefinition, spec),
    'family: inet4\ndst: ""\nsrc: 10.5.0.2\ngateway: 10.5.0.1\noutLinkIndex: 2\noutLinkName: eth0\ntable: main\npriority: 1024\nscope: global\ntype: unicast\nflags: ""\nprotocol: boot\n',
  );
  const local = routeStatusSpec({
    family: 4,
    table: 255,
    dst: "127.0.0.0",
    dstLen: 8,
    src: "127.0.0.1",
    gateway: "",
    outLinkIndex: 1,
    outLinkName: "lo",
    priority: 0,
    scope: 254,
    type: 2,
    protocol: 2,
    flags: 0,
    mtu: 0,
  });
  assert.equal(routeId(local), "local/inet4//127.0.0.0/8/0");
  const v6 = routeStatusSpec({
    family: 6,
    table: 254,
    dst: "fe80::",
    dstLen: 64,
    src: "",
    gateway: "",
    outLinkIndex: 2,
    outLinkName: "eth0",
    priority: 256,
    scope: 0,
    type: 1,
    protocol: 2,
    flags: 0,
    mtu: 0,
  });
  assert.equal(routeId(v6), "eth0/inet6//fe80::/64/256");
  const p = decode("talos.resource.definitions.network.RouteStatusSpec", encodeSpec(routeStatusDefinition, spec));
  assert.equal(p.table, 254);
  assert.equal(p.protocol, 3);
  assert.deepEqual(p.gateway, { ip: Buffer.from([10, 5, 0, 1]) });
  assert.deepEqual((p.destination as { ip: Buffer }).ip, Buffer.alloc(0));
});

test("LinkSpec's bond master: every option reaches its proto field (each distinct and nonzero, so a misnamed one decodes as 0)", () => {
  const bondMaster = {
    mode: "balance-alb",
    xmitHashPolicy: "encap3+4",
    lacpRate: "fast",
    arpValidate: "all",
    arpAllTargets: "all",
    primary: 3,
    primaryReselect: "failure",
    failOverMac: "follow",
    adSelect: "count",
    miimon: 100,
    updelay: 200,
    downdelay: 300,
    arpInterval: 9,
    resendIgmp: 4,
    minLinks: 2,
    lpInterval: 6,
    packetsPerSlave: 8,
    numPeerNotif: 10,
    tlbLogicalLb: 1,
    allSlavesActive: 1,
    useCarrier: true,
    adActorSysPrio: 65535,
    adUserPortKey: 5,
    peerNotifyDelay: 7,
  };
  const p = decode(
    "talos.resource.definitions.network.LinkSpecSpec",
    encodeSpec(linkSpecDefinition, {
      name: "bond0",
      logical: true,
      up: true,
      mtu: 0,
      kind: "bond",
      type: "ether",
      bondMaster,
      layer: "configuration",
    }),
  );
  assert.deepEqual(p.bond_master, {
    mode: 6,
    hash_policy: 4,
    lacp_rate: 1,
    arp_validate: 3,
    arp_all_targets: 1,
    primary_index: 3,
    primary_reselect: 2,
    fail_over_mac: 2,
    ad_select: 2,
    mii_mon: 100,
    up_delay: 200,
    down_delay: 300,
    arp_interval: 9,
    resend_igmp: 4,
    min_links: 2,
    lp_interval: 6,
    packets_per_slave: 8,
    num_peer_notif: 10,
    tlb_dynamic_lb: 1,
    all_slaves_active: 1,
    use_carrier: true,
    ad_actor_sys_prio: 65535,
    ad_user_port_key: 5,
    peer_notify_delay: 7,
  });
});
