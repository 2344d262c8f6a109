// The spec controllers against the fake kernel: merged specs put into `network` by
// hand (as the merge controllers would), then changed and removed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AddressSpecController } from "../../../agent/src/controllers/network/address-spec.js";
import { LinkSpecController, createRequest } from "../../../agent/src/controllers/network/link-spec.js";
import { DevicesStatusController } from "../../../agent/src/controllers/runtime/devices-status.js";
import { devicesStatusDefinition } from "../../../agent/src/resources/catalog/runtime.js";
import { mergeLinkSpecs } from "../../../agent/src/controllers/network/merge.js";
import { RouteSpecController } from "../../../agent/src/controllers/network/route-spec.js";
import {
  type AddressSpecSpec,
  type LinkSpecSpec,
  type RouteSpecSpec,
  networkDefinitions,
} from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { registerDefinitions } from "../../../agent/src/resources/definitions.js";
import { newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeNetKernel } from "../sys/net-fake.js";
import { type BondOptions, IFF_UP } from "../../../agent/src/sys/net.js";
import { bondOptionsDiffering } from "../../../agent/src/controllers/network/bond-settings.js";
import { withBondDefaults } from "../../../agent/src/network/bond-defaults.js";

const OWNER = { owner: "test" };

async function waitFor(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail(`timed out waiting for ${what}`);
}

function setup(t: { after(fn: () => void): void }) {
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth0" });
  kernel.addLink({ name: "eth1" });
  kernel.addLink({ name: "eth2" });
  const state = new ResourceState();
  registerDefinitions(state, [...networkDefinitions, devicesStatusDefinition]);
  const runtime = new ControllerRuntime(state);
  for (const c of [
    new DevicesStatusController({ udevd: false }),
    new LinkSpecController(kernel),
    new AddressSpecController(kernel),
    new RouteSpecController(kernel),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const put = <S>(type: string, id: string, spec: S) => {
    const cur = state.get<S>("network", type, id);
    if (cur) state.update({ ...cur, spec }, OWNER);
    else state.create(newResource("network", type, id, spec), OWNER);
  };
  const drop = (type: string, id: string) => state.destroy("network", type, id, OWNER);
  const up = (name: string) => ((kernel.links.find((l) => l.name === name)?.flags ?? 0) & IFF_UP) !== 0;
  return { kernel, state, runtime, put, drop, up, waitFor };
}

const link = (over: Partial<LinkSpecSpec> & { name: string }): LinkSpecSpec => ({
  logical: false,
  up: true,
  mtu: 0,
  kind: "",
  type: "ether",
  layer: "configuration",
  ...over,
});
const bond: LinkSpecSpec["bondMaster"] = {
  mode: "active-backup",
  xmitHashPolicy: "layer2",
  lacpRate: "slow",
  arpValidate: "none",
  arpAllTargets: "any",
  primaryReselect: "always",
  failOverMac: "none",
  miimon: 100,
};

test("links: a bond with two members, a vlan on it and a dummy are created; removed when their specs go", async (t) => {
  const { kernel, runtime, put, drop } = setup(t);
  put("LinkSpecs.net.talos.dev", "bond0", link({ name: "bond0", logical: true, kind: "bond", bondMaster: bond }));
  put("LinkSpecs.net.talos.dev", "eth0", link({ name: "eth0", masterName: "bond0", slaveIndex: 0 }));
  put("LinkSpecs.net.talos.dev", "eth1", link({ name: "eth1", masterName: "bond0", slaveIndex: 1 }));
  put(
    "LinkSpecs.net.talos.dev",
    "bond0.10",
    link({
      name: "bond0.10",
      logical: true,
      kind: "vlan",
      parentName: "bond0",
      vlan: { vlanID: 10, vlanProtocol: "802.1q" },
      mtu: 1400,
    }),
  );
  put("LinkSpecs.net.talos.dev", "dummy0", link({ name: "dummy0", logical: true, kind: "dummy" }));
  await waitFor("links built", () => kernel.links.some((l) => l.name === "bond0.10" && l.mtu === 1400));
  await runtime.whenIdle();
  const byName = new Map(kernel.links.map((l) => [l.name, l]));
  assert.equal(byName.get("eth0")!.masterIndex, byName.get("bond0")!.index);
  assert.equal(byName.get("eth1")!.masterIndex, byName.get("bond0")!.index);
  assert.equal(byName.get("bond0.10")!.vlanId, 10);
  assert.equal(byName.get("bond0.10")!.linkIndex, byName.get("bond0")!.index);
  assert.equal(byName.get("eth2")!.masterIndex, 0);
  // Members join the bond while down, then come up.
  const calls = kernel.calls.filter((c) => c.includes("eth0"));
  assert.deepEqual(calls.slice(calls.indexOf("setLinkMaster eth0 bond0")), [
    "setLinkMaster eth0 bond0",
    "setLinkUp eth0 true",
  ]);
  assert.deepEqual(
    kernel.calls.filter((c) => c.startsWith("createLink")),
    ["createLink bond bond0", "createLink dummy dummy0", "createLink vlan bond0.10"],
  );
  assert.equal(
    kernel.calls.some((c) => c.includes("eth2")),
    false,
    "a link without a spec is never touched",
  );

  for (const id of ["bond0.10", "dummy0", "bond0", "eth0", "eth1"]) drop("LinkSpecs.net.talos.dev", id);
  await waitFor(
    "logical links deleted",
    () => !kernel.links.some((l) => ["bond0", "bond0.10", "dummy0"].includes(l.name)),
  );
  await runtime.whenIdle();
  assert.deepEqual(
    kernel.links.map((l) => l.name),
    ["lo", "eth0", "eth1", "eth2"],
  );
});

// The bonding module's default bond0 as the kernel reports it: balance-rr, no MII monitoring, the driver's defaults.
const kernelDefaultBond: BondOptions = {
  mode: 0,
  xmitHashPolicy: 0,
  lacpRate: 0,
  arpValidate: 0,
  arpAllTargets: 0,
  primaryReselect: 0,
  failOverMac: 0,
  adSelect: 0,
  miimon: 0,
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
};
const talosBond = (over: Partial<NonNullable<LinkSpecSpec["bondMaster"]>>) =>
  withBondDefaults({ ...bond!, useCarrier: true, ...over });

async function bondWithMembers(t: { after(fn: () => void): void }, spec: NonNullable<LinkSpecSpec["bondMaster"]>) {
  const env = setup(t);
  env.put("LinkSpecs.net.talos.dev", "bond0", link({ name: "bond0", logical: true, kind: "bond", bondMaster: spec }));
  env.put("LinkSpecs.net.talos.dev", "eth0", link({ name: "eth0", masterName: "bond0", slaveIndex: 0 }));
  env.put("LinkSpecs.net.talos.dev", "eth1", link({ name: "eth1", masterName: "bond0", slaveIndex: 1 }));
  await env.waitFor("bond up with members", () => env.up("bond0") && env.up("eth0") && env.up("eth1"));
  await env.runtime.whenIdle();
  env.kernel.calls.length = 0;
  return env;
}

test("a bond found in place (the bonding module's default bond0) takes the spec's options in place: same index, nothing re-created", async (t) => {
  const { kernel, runtime, put, waitFor } = setup(t);
  const index = kernel.addLink({ name: "bond0", kind: "bond", bond: kernelDefaultBond }).index;
  put(
    "LinkSpecs.net.talos.dev",
    "bond0",
    link({ name: "bond0", logical: true, kind: "bond", bondMaster: talosBond({}) }),
  );
  await waitFor("options set", () => kernel.links.find((l) => l.name === "bond0")?.bond?.mode === 1);
  await runtime.whenIdle();
  assert.deepEqual(
    kernel.calls.filter((c) => c.includes("bond0")),
    ["setLinkSettings bond bond0", "setLinkUp bond0 true"],
  );
  const b = kernel.links.find((l) => l.name === "bond0")!;
  assert.deepEqual([b.index, b.bond!.miimon], [index, 100]);
});

test("a bond's option changed (miimon): down, members freed, options set in place, members back, up; the same index", async (t) => {
  const { kernel, runtime, put, waitFor, up } = await bondWithMembers(t, talosBond({}));
  const index = kernel.links.find((l) => l.name === "bond0")!.index;
  put(
    "LinkSpecs.net.talos.dev",
    "bond0",
    link({ name: "bond0", logical: true, kind: "bond", bondMaster: talosBond({ miimon: 200 }) }),
  );
  await waitFor(
    "back up with miimon 200",
    () => kernel.links.find((l) => l.name === "bond0")?.bond?.miimon === 200 && up("bond0") && up("eth0") && up("eth1"),
  );
  await runtime.whenIdle();
  assert.deepEqual(kernel.calls, [
    "setLinkUp bond0 false",
    "setLinkMaster eth0 none",
    "setLinkMaster eth1 none",
    "setLinkSettings bond bond0",
    "setLinkUp bond0 true",
    // A bond takes only members that are down.
    "setLinkUp eth0 false",
    "setLinkMaster eth0 bond0",
    "setLinkUp eth0 true",
    "setLinkUp eth1 false",
    "setLinkMaster eth1 bond0",
    "setLinkUp eth1 true",
  ]);
  const byName = new Map(kernel.links.map((l) => [l.name, l]));
  assert.equal(byName.get("bond0")!.index, index);
  assert.deepEqual([byName.get("eth0")!.masterIndex, byName.get("eth1")!.masterIndex], [index, index]);
});

test("a bond's mode changes in place too (the kernel takes it only down and without members); nothing runs again once the kernel matches", async (t) => {
  const { kernel, runtime, put, waitFor, up } = await bondWithMembers(t, talosBond({ primary: 2 }));
  const index = kernel.links.find((l) => l.name === "bond0")!.index;
  put(
    "LinkSpecs.net.talos.dev",
    "bond0",
    link({ name: "bond0", logical: true, kind: "bond", bondMaster: talosBond({ mode: "802.3ad", lacpRate: "fast" }) }),
  );
  await waitFor(
    "802.3ad, up with members",
    () => kernel.links.find((l) => l.name === "bond0")?.bond?.mode === 4 && up("bond0") && up("eth0") && up("eth1"),
  );
  await runtime.whenIdle();
  const b = kernel.links.find((l) => l.name === "bond0")!;
  assert.deepEqual([b.index, b.bond!.lacpRate, b.bond!.adActorSysPrio], [index, 1, 65535]);
  assert.equal(kernel.calls.filter((c) => c.startsWith("setLinkSettings")).length, 1);
  assert.equal(
    kernel.calls.some((c) => /createLink|deleteLink/.test(c)),
    false,
  );
  // A later link event (a cable) finds the kernel matching: nothing is sent again.
  kernel.setCarrier("eth2", false);
  await new Promise((r) => setTimeout(r, 20));
  await runtime.whenIdle();
  assert.equal(kernel.calls.filter((c) => c.startsWith("setLinkSettings")).length, 1);
});

test("bond options the kernel refuses: the bond comes back with its members and old options, and is not taken down again for the same spec", async (t) => {
  const { kernel, runtime, put, waitFor, up } = await bondWithMembers(t, talosBond({}));
  kernel.setLinkSettings = async (req) => {
    kernel.calls.push(`setLinkSettings ${req.kind} ${req.name} (refused)`);
    throw new Error("Request rejected: EINVAL");
  };
  put(
    "LinkSpecs.net.talos.dev",
    "bond0",
    link({ name: "bond0", logical: true, kind: "bond", bondMaster: talosBond({ minLinks: 5 }) }),
  );
  await waitFor("refused", () => kernel.calls.includes("setLinkSettings bond bond0 (refused)"));
  await waitFor("back up with members", () => up("bond0") && up("eth0") && up("eth1"));
  kernel.setCarrier("eth2", false);
  await new Promise((r) => setTimeout(r, 20));
  await runtime.whenIdle();
  assert.equal(kernel.calls.filter((c) => c === "setLinkUp bond0 false").length, 1);
  assert.equal(kernel.links.find((l) => l.name === "bond0")!.bond!.minLinks, 0);
});

test("a bridge's STP changes in place; a VLAN whose protocol changes is re-created", async (t) => {
  const { kernel, runtime, put, waitFor } = setup(t);
  put(
    "LinkSpecs.net.talos.dev",
    "br0",
    link({ name: "br0", logical: true, kind: "bridge", bridgeMaster: { stp: { enabled: false } } }),
  );
  put(
    "LinkSpecs.net.talos.dev",
    "eth0.5",
    link({
      name: "eth0.5",
      logical: true,
      kind: "vlan",
      parentName: "eth0",
      vlan: { vlanID: 5, vlanProtocol: "802.1q" },
    }),
  );
  await waitFor(
    "created",
    () => kernel.links.some((l) => l.name === "br0") && kernel.links.some((l) => l.name === "eth0.5"),
  );
  await runtime.whenIdle();
  const index = kernel.links.find((l) => l.name === "br0")!.index;
  put(
    "LinkSpecs.net.talos.dev",
    "br0",
    link({ name: "br0", logical: true, kind: "bridge", bridgeMaster: { stp: { enabled: true } } }),
  );
  put(
    "LinkSpecs.net.talos.dev",
    "eth0.5",
    link({
      name: "eth0.5",
      logical: true,
      kind: "vlan",
      parentName: "eth0",
      vlan: { vlanID: 5, vlanProtocol: "802.1ad" },
    }),
  );
  await waitFor(
    "changed",
    () =>
      kernel.links.find((l) => l.name === "br0")?.bridge?.stp === true &&
      kernel.links.find((l) => l.name === "eth0.5")?.vlanProtocol === 0x88a8,
  );
  await runtime.whenIdle();
  assert.equal(kernel.links.find((l) => l.name === "br0")!.index, index);
  assert.deepEqual(
    kernel.calls.filter((c) => /(Link|Settings) (bridge|vlan)|deleteLink/.test(c)),
    [
      "createLink bridge br0",
      "createLink vlan eth0.5",
      "setLinkSettings bridge br0",
      "deleteLink eth0.5",
      "createLink vlan eth0.5",
    ],
  );
});

test("bond options compared as the kernel holds them: only what the mode sends, delays in whole MII intervals, a primary named once enslaved", () => {
  const want: BondOptions = { ...kernelDefaultBond, mode: 1, miimon: 100, updelay: 250, primary: "eth1", lacpRate: 1 };
  const have: BondOptions = { ...kernelDefaultBond, mode: 1, miimon: 100, updelay: 200 };
  assert.deepEqual(
    bondOptionsDiffering(want, have, []),
    [],
    "lacp_rate is not sent for active-backup; 250 ms is held as 200; eth1 not enslaved yet",
  );
  assert.deepEqual(bondOptionsDiffering(want, have, ["eth1"]), ["primary"]);
  assert.deepEqual(bondOptionsDiffering({ ...want, primary: undefined }, { ...have, primary: "eth1" }, ["eth1"]), [
    "primary",
  ]);
  assert.deepEqual(bondOptionsDiffering({ ...want, downdelay: 100, useCarrier: false }, have, []), [
    "downdelay",
    "useCarrier",
  ]);
});

test("addresses and routes: applied, restored when deleted behind the controller's back, removed when the spec goes", async (t) => {
  const { kernel, runtime, put, drop } = setup(t);
  await kernel.setLinkUp("eth0", true);
  const addr: AddressSpecSpec = {
    address: "10.9.0.5/24",
    linkName: "eth0",
    family: "inet4",
    scope: "global",
    flags: "permanent",
    layer: "configuration",
  };
  const route: RouteSpecSpec = {
    family: "inet4",
    dst: "192.0.2.0/24",
    src: "",
    gateway: "10.9.0.1",
    outLinkName: "eth0",
    table: "main",
    priority: 200,
    scope: "global",
    type: "unicast",
    flags: "",
    protocol: "static",
    layer: "configuration",
  };
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24", addr);
  put("RouteSpecs.net.talos.dev", "inet4/10.9.0.1/192.0.2.0/24/200", route);
  await waitFor(
    "applied",
    () =>
      kernel.addresses.some((a) => a.address === "10.9.0.5") &&
      kernel.routes.some((r) => r.dst === "192.0.2.0" && r.priority === 200 && r.protocol === 4),
  );

  await kernel.removeAddress({ linkName: "eth0", address: "10.9.0.5", prefixLen: 24 });
  await waitFor("address restored", () => kernel.addresses.some((a) => a.address === "10.9.0.5"));
  await kernel.removeRoute({ family: 4, dst: "192.0.2.0", dstLen: 24, table: 254, priority: 200 });
  await waitFor("route restored", () => kernel.routes.some((r) => r.dst === "192.0.2.0"));

  drop("RouteSpecs.net.talos.dev", "inet4/10.9.0.1/192.0.2.0/24/200");
  drop("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24");
  await waitFor(
    "removed",
    () => !kernel.addresses.some((a) => a.address === "10.9.0.5") && !kernel.routes.some((r) => r.dst === "192.0.2.0"),
  );
  await runtime.whenIdle();
  assert.equal(kernel.calls.filter((c) => c === "addAddress eth0 10.9.0.5/24").length, 2);
});

test("link specs merge field by field: a higher layer's MTU over a default link brought up", () => {
  const merged = mergeLinkSpecs(
    link({ name: "eth0", layer: "default" }),
    link({ name: "eth0", up: false, mtu: 9000, layer: "operator" }),
  );
  assert.deepEqual(merged, link({ name: "eth0", up: true, mtu: 9000, layer: "operator" }));
});

test("an address with announceWithARP is announced each time it is added (a VIP taken over), others never", async (t) => {
  const { kernel, runtime, put } = setup(t);
  await kernel.setLinkUp("eth0", true);
  const vip: AddressSpecSpec = {
    address: "10.9.0.100/32",
    linkName: "eth0",
    family: "inet4",
    scope: "global",
    flags: "permanent",
    announceWithARP: true,
    layer: "operator",
  };
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.100/32", vip);
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24", {
    ...vip,
    address: "10.9.0.5/24",
    announceWithARP: undefined,
    layer: "configuration",
  });
  await waitFor(
    "added",
    () =>
      kernel.addresses.some((a) => a.address === "10.9.0.100") &&
      kernel.addresses.some((a) => a.address === "10.9.0.5"),
  );
  await runtime.whenIdle();
  assert.deepEqual(
    kernel.calls.filter((c) => c.startsWith("announceAddress")),
    ["announceAddress eth0 10.9.0.100"],
  );
  // Deleted behind our back and put back: announced again.
  await kernel.removeAddress({ linkName: "eth0", address: "10.9.0.100", prefixLen: 32 });
  await waitFor(
    "announced again",
    () => kernel.calls.filter((c) => c === "announceAddress eth0 10.9.0.100").length === 2,
  );
});

test("bond: the spec's names become the kernel's numbers, unset options zero, in the create request", () => {
  const spec = {
    mode: "802.3ad",
    xmitHashPolicy: "layer3+4",
    lacpRate: "fast",
    arpValidate: "none",
    arpAllTargets: "any",
    primaryReselect: "always",
    failOverMac: "none",
    miimon: 100,
    adActorSysPrio: 65535,
  };
  const req = createRequest(
    {
      name: "bond0",
      logical: true,
      up: true,
      mtu: 0,
      kind: "bond",
      type: "ether",
      bondMaster: spec,
      layer: "configuration",
    },
    new Map(),
  );
  assert.deepEqual(req, {
    kind: "bond",
    name: "bond0",
    bond: {
      mode: 4,
      xmitHashPolicy: 1,
      lacpRate: 1,
      arpValidate: 0,
      arpAllTargets: 0,
      primaryReselect: 0,
      failOverMac: 0,
      adSelect: 0,
      miimon: 100,
      updelay: 0,
      downdelay: 0,
      arpInterval: 0,
      resendIgmp: 0,
      minLinks: 0,
      lpInterval: 0,
      packetsPerSlave: 0,
      numPeerNotif: 0,
      tlbDynamicLb: 0,
      allSlavesActive: 0,
      useCarrier: false,
      adActorSysPrio: 65535,
      adUserPortKey: 0,
      peerNotifyDelay: 0,
    },
  });
  // A bond spec without options gets Talos's defaults (the kernel refuses lp_interval 0).
  const bare = createRequest(
    { name: "bond1", logical: true, up: true, mtu: 0, kind: "bond", type: "ether", layer: "configuration" },
    new Map(),
  );
  assert.deepEqual(
    bare?.kind === "bond" && [
      bare.bond.mode,
      bare.bond.lpInterval,
      bare.bond.resendIgmp,
      bare.bond.packetsPerSlave,
      bare.bond.numPeerNotif,
      bare.bond.tlbDynamicLb,
    ],
    [0, 1, 1, 1, 1, 1],
  );
});
