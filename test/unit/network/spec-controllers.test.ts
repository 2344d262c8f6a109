// The spec controllers against the fake kernel: merged specs put into `network` by
// hand (as the merge controllers would), then changed and removed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AddressSpecController } from "../../../agent/src/controllers/network/address-spec.js";
import { LinkSpecController, createRequest } from "../../../agent/src/controllers/network/link-spec.js";
import { mergeLinkSpecs } from "../../../agent/src/controllers/network/merge.js";
import { RouteSpecController } from "../../../agent/src/controllers/network/route-spec.js";
import { type AddressSpecSpec, type LinkSpecSpec, type RouteSpecSpec, networkDefinitions } from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { registerDefinitions } from "../../../agent/src/resources/definitions.js";
import { newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeNetKernel } from "../../../agent/src/sys/net-fake.js";

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
  registerDefinitions(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  for (const c of [new LinkSpecController(kernel), new AddressSpecController(kernel), new RouteSpecController(kernel)]) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const put = <S>(type: string, id: string, spec: S) => {
    const cur = state.get<S>("network", type, id);
    if (cur) state.update({ ...cur, spec }, OWNER);
    else state.create(newResource("network", type, id, spec), OWNER);
  };
  const drop = (type: string, id: string) => state.destroy("network", type, id, OWNER);
  return { kernel, state, runtime, put, drop };
}

const link = (over: Partial<LinkSpecSpec> & { name: string }): LinkSpecSpec => ({ logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "configuration", ...over });
const bond: LinkSpecSpec["bondMaster"] = { mode: "active-backup", xmitHashPolicy: "layer2", lacpRate: "slow", arpValidate: "none", arpAllTargets: "any", primaryReselect: "always", failOverMac: "none", miimon: 100 };

test("links: a bond with two members, a vlan on it and a dummy are created; removed when their specs go", async (t) => {
  const { kernel, runtime, put, drop } = setup(t);
  put("LinkSpecs.net.talos.dev", "bond0", link({ name: "bond0", logical: true, kind: "bond", bondMaster: bond }));
  put("LinkSpecs.net.talos.dev", "eth0", link({ name: "eth0", masterName: "bond0", slaveIndex: 0 }));
  put("LinkSpecs.net.talos.dev", "eth1", link({ name: "eth1", masterName: "bond0", slaveIndex: 1 }));
  put("LinkSpecs.net.talos.dev", "bond0.10", link({ name: "bond0.10", logical: true, kind: "vlan", parentName: "bond0", vlan: { vlanID: 10, vlanProtocol: "802.1q" }, mtu: 1400 }));
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
  assert.deepEqual(calls.slice(calls.indexOf("setLinkMaster eth0 bond0")), ["setLinkMaster eth0 bond0", "setLinkUp eth0 true"]);
  assert.deepEqual(kernel.calls.filter((c) => c.startsWith("createLink")), ["createLink bond bond0", "createLink dummy dummy0", "createLink vlan bond0.10"]);
  assert.equal(kernel.calls.some((c) => c.includes("eth2")), false, "a link without a spec is never touched");

  for (const id of ["bond0.10", "dummy0", "bond0", "eth0", "eth1"]) drop("LinkSpecs.net.talos.dev", id);
  await waitFor("logical links deleted", () => !kernel.links.some((l) => ["bond0", "bond0.10", "dummy0"].includes(l.name)));
  await runtime.whenIdle();
  assert.deepEqual(kernel.links.map((l) => l.name), ["lo", "eth0", "eth1", "eth2"]);
});

test("a bond found in place (the bonding module's default bond0) or specified anew is re-created with the spec's options", async (t) => {
  const { kernel, runtime, put } = setup(t);
  kernel.addLink({ name: "bond0", kind: "bond" });
  put("LinkSpecs.net.talos.dev", "bond0", link({ name: "bond0", logical: true, kind: "bond", bondMaster: bond }));
  await waitFor("re-created", () => kernel.calls.includes("createLink bond bond0"));
  await runtime.whenIdle();
  assert.deepEqual(kernel.calls.filter((c) => c.includes("bond0") && /Link /.test(c)), ["deleteLink bond0", "createLink bond bond0"]);
  put("LinkSpecs.net.talos.dev", "bond0", link({ name: "bond0", logical: true, kind: "bond", bondMaster: { ...bond, mode: "802.3ad", lacpRate: "fast" } }));
  await waitFor("re-created for the new mode", () => kernel.calls.filter((c) => c === "createLink bond bond0").length === 2);
  await runtime.whenIdle();
  assert.equal(kernel.calls.filter((c) => c === "deleteLink bond0").length, 2);
});

test("addresses and routes: applied, restored when deleted behind the controller's back, removed when the spec goes", async (t) => {
  const { kernel, runtime, put, drop } = setup(t);
  await kernel.setLinkUp("eth0", true);
  const addr: AddressSpecSpec = { address: "10.9.0.5/24", linkName: "eth0", family: "inet4", scope: "global", flags: "permanent", layer: "configuration" };
  const route: RouteSpecSpec = { family: "inet4", dst: "192.0.2.0/24", src: "", gateway: "10.9.0.1", outLinkName: "eth0", table: "main", priority: 200, scope: "global", type: "unicast", flags: "", protocol: "static", layer: "configuration" };
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24", addr);
  put("RouteSpecs.net.talos.dev", "inet4/10.9.0.1/192.0.2.0/24/200", route);
  await waitFor("applied", () => kernel.addresses.some((a) => a.address === "10.9.0.5") && kernel.routes.some((r) => r.dst === "192.0.2.0" && r.priority === 200 && r.protocol === 4));

  await kernel.removeAddress({ linkName: "eth0", address: "10.9.0.5", prefixLen: 24 });
  await waitFor("address restored", () => kernel.addresses.some((a) => a.address === "10.9.0.5"));
  await kernel.removeRoute({ family: 4, dst: "192.0.2.0", dstLen: 24, table: 254, priority: 200 });
  await waitFor("route restored", () => kernel.routes.some((r) => r.dst === "192.0.2.0"));

  drop("RouteSpecs.net.talos.dev", "inet4/10.9.0.1/192.0.2.0/24/200");
  drop("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24");
  await waitFor("removed", () => !kernel.addresses.some((a) => a.address === "10.9.0.5") && !kernel.routes.some((r) => r.dst === "192.0.2.0"));
  await runtime.whenIdle();
  assert.equal(kernel.calls.filter((c) => c === "addAddress eth0 10.9.0.5/24").length, 2);
});

test("link specs merge field by field: a higher layer's MTU over a default link brought up", () => {
  const merged = mergeLinkSpecs(link({ name: "eth0", layer: "default" }), link({ name: "eth0", up: false, mtu: 9000, layer: "operator" }));
  assert.deepEqual(merged, link({ name: "eth0", up: true, mtu: 9000, layer: "operator" }));
});

test("an address with announceWithARP is announced each time it is added (a VIP taken over), others never", async (t) => {
  const { kernel, runtime, put } = setup(t);
  await kernel.setLinkUp("eth0", true);
  const vip: AddressSpecSpec = { address: "10.9.0.100/32", linkName: "eth0", family: "inet4", scope: "global", flags: "permanent", announceWithARP: true, layer: "operator" };
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.100/32", vip);
  put("AddressSpecs.net.talos.dev", "eth0/10.9.0.5/24", { ...vip, address: "10.9.0.5/24", announceWithARP: undefined, layer: "configuration" });
  await waitFor("added", () => kernel.addresses.some((a) => a.address === "10.9.0.100") && kernel.addresses.some((a) => a.address === "10.9.0.5"));
  await runtime.whenIdle();
  assert.deepEqual(kernel.calls.filter((c) => c.startsWith("announceAddress")), ["announceAddress eth0 10.9.0.100"]);
  // Deleted behind our back and put back: announced again.
  await kernel.removeAddress({ linkName: "eth0", address: "10.9.0.100", prefixLen: 32 });
  await waitFor("announced again", () => kernel.calls.filter((c) => c === "announceAddress eth0 10.9.0.100").length === 2);
});

test("bond: the spec's names become the kernel's numbers, unset options zero, in the create request", () => {
  const spec = { mode: "802.3ad", xmitHashPolicy: "layer3+4", lacpRate: "fast", arpValidate: "none", arpAllTargets: "any", primaryReselect: "always", failOverMac: "none", miimon: 100, adActorSysPrio: 65535 };
  const req = createRequest({ name: "bond0", logical: true, up: true, mtu: 0, kind: "bond", type: "ether", bondMaster: spec, layer: "configuration" }, new Map());
  assert.deepEqual(req, {
    kind: "bond", name: "bond0",
    bond: { mode: 4, xmitHashPolicy: 1, lacpRate: 1, arpValidate: 0, arpAllTargets: 0, primaryReselect: 0, failOverMac: 0, adSelect: 0, miimon: 100, updelay: 0, downdelay: 0, arpInterval: 0, resendIgmp: 0, minLinks: 0, lpInterval: 0, packetsPerSlave: 0, numPeerNotif: 0, tlbDynamicLb: 0, allSlavesActive: 0, useCarrier: false, adActorSysPrio: 65535, adUserPortKey: 0, peerNotifyDelay: 0 },
  });
  // A bond spec without options gets Talos's defaults (the kernel refuses lp_interval 0).
  const bare = createRequest({ name: "bond1", logical: true, up: true, mtu: 0, kind: "bond", type: "ether", layer: "configuration" }, new Map());
  assert.deepEqual(bare?.kind === "bond" && [bare.bond.mode, bare.bond.lpInterval, bare.bond.resendIgmp, bare.bond.packetsPerSlave, bare.bond.numPeerNotif, bare.bond.tlbDynamicLb], [0, 1, 1, 1, 1, 1]);
});
