import assert from "node:assert/strict";
import { test } from "node:test";
import {
  EtcFileController,
  renderHosts,
  renderResolvConf,
  type EtcFileName,
} from "../../../agent/src/controllers/network/etc-files.js";
import { HostDNSConfigId, HostDNSConfigType } from "../../../agent/src/resources/catalog/hostdns.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  ResolverStatusId,
  ResolverStatusType,
} from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

test("resolv.conf: at most three nameservers, the search domain after a blank line", () => {
  assert.equal(
    renderResolvConf(["10.0.0.53", "1.1.1.1", "8.8.8.8", "9.9.9.9"], "lab.test"),
    "nameserver 10.0.0.53\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n\nsearch lab.test\n",
  );
  assert.equal(renderResolvConf(["1.1.1.1"], ""), "nameserver 1.1.1.1\n");
});

test("hosts: Talos's layout (first column padded as Go's tabwriter does), FQDN then short name, extra entries", () => {
  assert.equal(
    renderHosts("10.0.2.15", "node-1", "lab.test", [{ ip: "192.168.10.100", aliases: ["registry.lab", "mirror"] }]),
    [
      "127.0.0.1      localhost",
      "10.0.2.15      node-1.lab.test node-1",
      "::1            localhost ip6-localhost ip6-loopback",
      "ff02::1        ip6-allnodes",
      "ff02::2        ip6-allrouters",
      "192.168.10.100 registry.lab mirror",
      "",
    ].join("\n"),
  );
  assert.equal(renderHosts("10.0.2.15", "talos-10-0-2-15", "", []).split("\n")[1], "10.0.2.15 talos-10-0-2-15");
});

test("EtcFileController: pods get the host DNS service address as their resolver, or the node's resolvers when it has none", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const written = new Map<EtcFileName, string>();
  runtime.register(new EtcFileController(async (name, text) => void written.set(name, text)));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  state.modify(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId, "test", () => ({ dnsServers: ["10.0.2.3"] }));
  await runtime.whenIdle();
  assert.deepEqual([...written.keys()], ["resolv.conf"], "no pod resolv.conf before the host DNS config exists");
  state.modify(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId, "test", () => ({
    enabled: true,
    listenAddresses: ["127.0.0.53:53"],
    serviceHostDNSAddress: "10.96.0.9",
  }));
  await runtime.whenIdle();
  assert.equal(written.get("resolv.conf"), "nameserver 127.0.0.53\n");
  assert.equal(written.get("pod-resolv.conf"), "nameserver 10.96.0.9\n");
  state.modify(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId, "test", () => ({ enabled: false }));
  await runtime.whenIdle();
  assert.equal(written.get("resolv.conf"), "nameserver 10.0.2.3\n");
  assert.equal(written.get("pod-resolv.conf"), "nameserver 10.0.2.3\n");
});
