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
import { computeNodeAddresses } from "../../../../agent/src/controllers/network/node-address.js";
import {
  HostnameStatusController,
  ResolverStatusController,
} from "../../../../agent/src/controllers/network/status.js";
import {
  PlatformConfigController,
  type PlatformNetwork,
} from "../../../../agent/src/controllers/runtime/platform-network.js";
import {
  dhcp4Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  resolvers,
  staticAddress,
  staticRoute,
  timeServers,
} from "../../../../agent/src/network/platform-config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  AddressStatusType,
  type AddressStatusSpec,
  HostnameStatusId,
  HostnameStatusType,
  LinkStatusType,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  ResolverStatusId,
  ResolverStatusType,
} from "../../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

test("a cloud's network becomes platform-layer specs; its external addresses AddressStatuses of the link external; all gone with it", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const network = new Observed<PlatformNetwork | undefined>(undefined);
  for (const c of [
    new PlatformConfigController(network),
    new HostnameStatusController(),
    new ResolverStatusController(),
    new AddressMergeController(),
    new RouteMergeController(),
    new LinkMergeController(),
    new OperatorMergeController(),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const ids = (ns: string, type: string) =>
    state
      .list(ns, type)
      .map((r) => r.metadata.id)
      .sort();

  const config = emptyPlatformNetworkConfig();
  config.links.push(linkUp("eth0", 1460));
  config.operators.push(dhcp4Operator("eth0"));
  config.addresses.push(staticAddress("eth0", { address: "2001:db8::5", family: "inet6", bits: 64 }));
  config.routes.push(staticRoute("eth0", "inet6", { gateway: "fe80::1", priority: 2048 }));
  config.hostnames.push(hostnameSpec("node-1.example.internal"));
  config.resolvers.push(resolvers(["169.254.169.254"]));
  config.timeServers.push(timeServers(["metadata.google.internal"]));
  config.externalIPs.push("198.51.100.7", "2001:db8:ffff::7");
  network.set({ config });
  await runtime.whenIdle();

  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "LinkSpecs.net.talos.dev"), ["platform/eth0"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "OperatorSpecs.net.talos.dev"), ["platform/dhcp4/eth0"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "AddressSpecs.net.talos.dev"), ["platform/eth0/2001:db8::5/64"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "RouteSpecs.net.talos.dev"), ["platform/eth0/inet6/fe80::1//2048"]);
  assert.deepEqual(state.get(NETWORK_CONFIG_NAMESPACE, "TimeServerSpecs.net.talos.dev", "platform/timeservers")?.spec, {
    timeServers: ["metadata.google.internal"],
    layer: "platform",
  });
  assert.deepEqual(state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec, {
    hostname: "node-1",
    domainname: "example.internal",
  });
  assert.deepEqual(
    (state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers,
    ["169.254.169.254"],
  );
  assert.equal((state.get(NETWORK_NAMESPACE, "LinkSpecs.net.talos.dev", "eth0")?.spec as { mtu: number }).mtu, 1460);

  const external = state.list<AddressStatusSpec>(NETWORK_NAMESPACE, AddressStatusType);
  assert.deepEqual(
    external.map((r) => [r.metadata.id, r.spec]),
    [
      [
        "external/198.51.100.7/32",
        { address: "198.51.100.7/32", linkIndex: 0, linkName: "external", family: "inet4", scope: "global", flags: "" },
      ],
      [
        "external/2001:db8:ffff::7/128",
        {
          address: "2001:db8:ffff::7/128",
          linkIndex: 0,
          linkName: "external",
          family: "inet6",
          scope: "global",
          flags: "",
        },
      ],
    ],
  );
  // As in Talos, an external address is current (always up) and never routed.
  const sets = computeNodeAddresses([], external);
  assert.deepEqual(sets.current, ["198.51.100.7/32", "2001:db8:ffff::7/128"]);
  assert.deepEqual(sets.routed, []);

  network.set({});
  await runtime.whenIdle();
  assert.deepEqual(state.list(NETWORK_NAMESPACE, AddressStatusType), []);
  for (const type of ["AddressSpecs", "RouteSpecs", "LinkSpecs", "OperatorSpecs", "TimeServerSpecs", "HostnameSpecs"])
    assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, `${type}.net.talos.dev`), [], type);
});

test("links a cloud names by MAC follow the node's link with that MAC once it appears", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const network = new Observed<PlatformNetwork | undefined>(undefined);
  runtime.register(new PlatformConfigController(network));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const ids = (type: string) =>
    state
      .list(NETWORK_CONFIG_NAMESPACE, type)
      .map((r) => r.metadata.id)
      .sort();

  const config = emptyPlatformNetworkConfig();
  config.links.push(linkUp("eth0"));
  config.addresses.push(staticAddress("eth0", { address: "10.217.0.5", family: "inet4", bits: 24 }));
  config.routes.push(staticRoute("eth0", "inet4", { gateway: "10.217.0.1" }));
  config.linkMacs = { eth0: "fa:16:3e:5a:21:0b" };
  network.set({ config });
  await runtime.whenIdle();
  assert.deepEqual(ids("AddressSpecs.net.talos.dev"), ["platform/eth0/10.217.0.5/24"]);

  state.modify(
    NETWORK_NAMESPACE,
    LinkStatusType,
    "ens3",
    "network.LinkStatusController",
    () =>
      ({
        index: 2,
        type: "ether",
        kind: "",
        hardwareAddr: "fa:16:3e:5a:21:0b",
        permanentAddr: "FA:16:3E:5A:21:0B",
      }) as never,
  );
  await runtime.whenIdle();
  assert.deepEqual(ids("AddressSpecs.net.talos.dev"), ["platform/ens3/10.217.0.5/24"]);
  assert.deepEqual(ids("LinkSpecs.net.talos.dev"), ["platform/ens3"]);
  assert.equal(
    (
      state.get(NETWORK_CONFIG_NAMESPACE, "RouteSpecs.net.talos.dev", "platform/inet4/10.217.0.1//1024")?.spec as {
        outLinkName: string;
      }
    ).outLinkName,
    "ens3",
  );
});
