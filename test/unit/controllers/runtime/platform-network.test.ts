import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { networkDefinitions } from "../../../../agent/src/controllers/network/index.js";
import { AddressMergeController, LinkMergeController, OperatorMergeController, RouteMergeController } from "../../../../agent/src/controllers/network/merge.js";
import { HostnameStatusController, ResolverStatusController } from "../../../../agent/src/controllers/network/status.js";
import { PlatformConfigController, type PlatformNetwork } from "../../../../agent/src/controllers/runtime/platform-network.js";
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
  const ids = (ns: string, type: string) => state.list(ns, type).map((r) => r.metadata.id).sort();

  network.set({ hostname: { hostname: "nocloud-node", domainname: "lab" }, nocloud: parseNocloudNetwork(NETWORK_CONFIG)! });
  await runtime.whenIdle();
  assert.deepEqual(state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec, { hostname: "nocloud-node", domainname: "lab" });
  assert.deepEqual((state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers, ["10.0.0.53"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "AddressSpecs.net.talos.dev"), ["platform/eth0/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "RouteSpecs.net.talos.dev"), ["platform/inet4/10.0.2.2//1024"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "LinkSpecs.net.talos.dev"), ["platform/eth0"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "OperatorSpecs.net.talos.dev"), ["platform/dhcp4/eth0"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "AddressSpecs.net.talos.dev"), ["eth0/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "OperatorSpecs.net.talos.dev"), ["dhcp4/eth0"]);

  // The link with that MAC appears under another name: the specs follow it.
  state.modify(NETWORK_NAMESPACE, LinkStatusType, "enp0s3", "network.LinkStatusController", () => ({ index: 2, type: "ether", kind: "", hardwareAddr: "52:54:00:12:34:56", permanentAddr: "52:54:00:12:34:56" }) as never);
  await runtime.whenIdle();
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "AddressSpecs.net.talos.dev"), ["platform/enp0s3/10.0.2.50/24"]);
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, "LinkSpecs.net.talos.dev"), ["platform/enp0s3"]);
  assert.deepEqual(ids(NETWORK_NAMESPACE, "AddressSpecs.net.talos.dev"), ["enp0s3/10.0.2.50/24"]);

  // DHCP (operator layer) wins over the platform, as in Talos.
  state.modify(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "dhcp4/eth0/hostname", "test", () => ({ hostname: "from-dhcp", domainname: "", layer: "operator" }) as never);
  await runtime.whenIdle();
  assert.equal((state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec as { hostname: string }).hostname, "from-dhcp");

  network.set({});
  await runtime.whenIdle();
  assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, HostnameSpecType), ["dhcp4/eth0/hostname"]);
  for (const type of ["AddressSpecs", "RouteSpecs", "LinkSpecs", "OperatorSpecs"]) assert.deepEqual(ids(NETWORK_CONFIG_NAMESPACE, `${type}.net.talos.dev`), [], type);
  assert.deepEqual((state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers, []);
});
