import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { networkDefinitions } from "../../../../agent/src/controllers/network/index.js";
import {
  AddressMergeController,
  LinkMergeController,
  OperatorMergeController,
  RouteMergeController,
} from "../../../../agent/src/controllers/network/merge.js";
import {
  HostnameStatusController,
  ResolverStatusController,
} from "../../../../agent/src/controllers/network/status.js";
import {
  PlatformConfigController,
  type PlatformNetwork,
  type PlatformNetworkCache,
} from "../../../../agent/src/controllers/runtime/platform-network.js";
import { parseNocloudNetwork } from "../../../../agent/src/network/nocloud-network.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  HostnameSpecType,
  HostnameStatusId,
  HostnameStatusType,
  LinkStatusType,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  ResolverStatusId,
  ResolverStatusType,
} from "../../../../agent/src/resources/catalog/network.js";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

const NETWORK_CONFIG = `version: 2
ethernets:
  eth0:
    match: {macaddress: "52:54:00:12:34:56"}
    addresses: [10.0.2.50/24]
    gateway4: 10.0.2.2
    dhcp4: true
    nameservers: {addresses: [10.0.0.53]}
`;

test("the platform's hostname and network-config become platform-layer specs (ids platform/...), merged below DHCP; gone when the platform gives none", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const network = new Observed<PlatformNetwork | undefined>(undefined);
  const controllers = [
    new PlatformConfigController(network),
    new HostnameStatusController(),
    new ResolverStatusController(),
    new AddressMergeController(),
    new RouteMergeController(),
    new LinkMergeController(),
    new OperatorMergeController(),
  ];
  for (const c of controllers) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const ids = (ns: string, type: string) =>
    state
      .list(ns, type)
      .map((r) => r.metadata.id)
      .sort();

  network.set({
    hostname: { hostname: "nocloud-node", domainname: "lab" },
    nocloud: parseNocloudNetwork(NETWORK_CONFIG)!,
  });
  await runtime.whenIdle();
  assert.deepEqual(state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec, {
    hostname: "nocloud-node",
    domainname: "lab",
  });
  assert.deepEqual(
    (state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers,
    ["10.0.0.53"],
  );
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "AddressSpecs.net.talos.dev"), ["platform/eth0/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "RouteSpecs.net.talos.dev"), ["platform/inet4/10.0.2.2//1024"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "LinkSpecs.net.talos.dev"), ["platform/eth0"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "OperatorSpecs.net.talos.dev"), ["platform/dhcp4/eth0"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "AddressSpecs.net.talos.dev"), ["eth0/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "OperatorSpecs.net.talos.dev"), ["dhcp4/eth0"]);

  // The link with that MAC appears under another name: the specs follow it.
  state.modify(
    NETWORK_NAMESPACE,
    LinkStatusType,
    "enp0s3",
    "network.LinkStatusController",
    () =>
      ({
        index: 2,
        type: "ether",
        kind: "",
        hardwareAddr: "52:54:00:12:34:56",
        permanentAddr: "52:54:00:12:34:56",
      }) as never,
  );
  await runtime.whenIdle();
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "AddressSpecs.net.talos.dev"), ["platform/enp0s3/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "LinkSpecs.net.talos.dev"), ["platform/enp0s3"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "AddressSpecs.net.talos.dev"), ["enp0s3/10.0.2.50/24"]);

  // DHCP (operator layer) wins over the platform, as in Talos.
  state.modify(
    NETWORK_CONFIG_NAMESPACE,
    HostnameSpecType,
    "dhcp4/eth0/hostname",
    "test",
    () => ({ hostname: "from-dhcp", domainname: "", layer: "operator" }) as never,
  );
  await runtime.whenIdle();
  assert.equal(
    (state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec as { hostname: string }).hostname,
    "from-dhcp",
  );

  network.set({});
  await runtime.whenIdle();
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, HostnameSpecType), ["dhcp4/eth0/hostname"]);
  for (const type of ["AddressSpecs", "RouteSpecs", "LinkSpecs", "OperatorSpecs"])
    assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, `${type}.net.talos.dev`), [], type);
  assert.deepEqual(
    (state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers,
    [],
  );
});

/** One boot: the platform controller over a fresh store, with STATE's file in `disk`. */
function boot(t: { after(fn: () => void): void }, disk: { text?: string; writes: number }, alwaysMounted = false) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const network = new Observed<PlatformNetwork | undefined>(undefined);
  const cache: PlatformNetworkCache = {
    alwaysMounted,
    read: async () => {
      if (disk.text === "unreadable") throw new Error("EIO");
      return disk.text;
    },
    write: async (text) => {
      disk.text = text;
      disk.writes++;
    },
  };
  runtime.register(new PlatformConfigController(network, cache));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  state.modify(
    NETWORK_NAMESPACE,
    LinkStatusType,
    "eth0",
    "network.LinkStatusController",
    () =>
      ({
        index: 2,
        type: "ether",
        kind: "",
        hardwareAddr: "52:54:00:12:34:56",
        permanentAddr: "52:54:00:12:34:56",
      }) as never,
  );
  const mountState = () =>
    state.modify(
      RUNTIME_NAMESPACE,
      MountStatusType,
      "STATE",
      "runtime.MountStatusController",
      () => ({ source: "/dev/vda5", target: "/system/state", filesystemType: "xfs", encrypted: false }) as never,
    );
  const ids = (type: string) =>
    state
      .list(NETWORK_CONFIG_NAMESPACE, type)
      .map((r) => r.metadata.id)
      .sort();
  return { runtime, network, mountState, ids };
}

test("the platform's network is kept on STATE once mounted, and a later boot whose platform gives nothing uses it (as Talos's platform-network.yaml)", async (t) => {
  const disk: { text?: string; writes: number } = { writes: 0 };
  const first = boot(t, disk);
  const given: PlatformNetwork = {
    hostname: { hostname: "nocloud-node", domainname: "lab" },
    nocloud: parseNocloudNetwork(NETWORK_CONFIG)!,
  };
  first.network.set(given);
  await first.runtime.whenIdle();
  assert.equal(disk.writes, 0, "nothing is written before STATE is mounted");
  assert.deepEqual(first.ids("AddressSpecs.net.talos.dev"), ["platform/eth0/10.0.2.50/24"]);
  first.mountState();
  await first.runtime.whenIdle();
  assert.equal(disk.writes, 1);
  first.network.set({ ...given });
  await first.runtime.whenIdle();
  assert.equal(disk.writes, 1, "an unchanged copy is not written again");

  // The next boot: the platform's source is unreachable (nothing given); nothing until STATE is mounted, then the copy.
  const second = boot(t, disk);
  await second.runtime.whenIdle();
  assert.deepEqual(second.ids("AddressSpecs.net.talos.dev"), []);
  second.mountState();
  await second.runtime.whenIdle();
  assert.deepEqual(second.ids("AddressSpecs.net.talos.dev"), ["platform/eth0/10.0.2.50/24"]);
  assert.deepEqual(second.ids("RouteSpecs.net.talos.dev"), ["platform/inet4/10.0.2.2//1024"]);
  assert.deepEqual(second.ids("OperatorSpecs.net.talos.dev"), ["platform/dhcp4/eth0"]);
  assert.deepEqual(second.ids(HostnameSpecType), ["platform/hostname"]);
  // The live network, once it comes, always wins and replaces the copy.
  second.network.set({ hostname: { hostname: "renamed", domainname: "" } });
  await second.runtime.whenIdle();
  assert.deepEqual(second.ids("AddressSpecs.net.talos.dev"), []);
  assert.equal(disk.writes, 2);
  assert.match(disk.text!, /hostname: renamed/);
});

test("a container's state is always there; an unreadable copy is ignored and replaced", async (t) => {
  const disk: { text?: string; writes: number } = { text: "unreadable", writes: 0 };
  const b = boot(t, disk, true);
  await b.runtime.whenIdle();
  assert.deepEqual(b.ids(HostnameSpecType), []);
  b.network.set({ hostname: { hostname: "ctr", domainname: "" } });
  await b.runtime.whenIdle();
  assert.equal(disk.writes, 1);
  assert.deepEqual(b.ids(HostnameSpecType), ["platform/hostname"]);
});
