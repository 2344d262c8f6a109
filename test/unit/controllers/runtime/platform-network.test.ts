import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { networkDefinitions } from "../../../../agent/src/controllers/network/index.js";
import { HostnameStatusController, ResolverStatusController } from "../../../../agent/src/controllers/network/status.js";
import { PlatformHostnameController, PlatformResolversController, type PlatformNetwork } from "../../../../agent/src/controllers/runtime/platform-network.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { HostnameSpecType, HostnameStatusId, HostnameStatusType, NETWORK_CONFIG_NAMESPACE, NETWORK_NAMESPACE, ResolverStatusId, ResolverStatusType } from "../../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

test("the platform's hostname and DNS servers become platform-layer specs, merged below DHCP; gone when the platform gives none", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const network = new Observed<PlatformNetwork | undefined>(undefined);
  for (const c of [new PlatformHostnameController(network), new PlatformResolversController(network), new HostnameStatusController(), new ResolverStatusController()]) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);

  network.set({ hostname: { hostname: "nocloud-node", domainname: "lab" }, dnsServers: ["10.0.0.53"] });
  await runtime.whenIdle();
  assert.deepEqual(state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec, { hostname: "nocloud-node", domainname: "lab" });
  assert.deepEqual((state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers, ["10.0.0.53"]);

  // DHCP (operator layer) wins over the platform, as in Talos.
  state.modify(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "dhcp4/eth0/hostname", "test", () => ({ hostname: "from-dhcp", domainname: "", layer: "operator" }) as never);
  await runtime.whenIdle();
  assert.equal((state.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec as { hostname: string }).hostname, "from-dhcp");

  network.set({ dnsServers: [] });
  await runtime.whenIdle();
  assert.deepEqual(state.list(NETWORK_CONFIG_NAMESPACE, HostnameSpecType).map((r) => r.metadata.id), ["dhcp4/eth0/hostname"]);
  assert.deepEqual((state.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec as { dnsServers: string[] }).dnsServers, []);
});
