// EtcdSpec's addresses: the cases of Talos v1.7.6's etcd spec_test.go (routed addresses 10.0.0.5,
// 192.168.1.1, 192.168.1.50 and two IPv6; current ones add 1.3.5.7).
import assert from "node:assert/strict";
import { test } from "node:test";
import { EtcdSpecController, etcdAddresses, filterIPs } from "../../../../agent/src/controllers/etcd/spec.js";
import {
  ETCD_NAMESPACE,
  EtcdConfigId,
  EtcdConfigType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdConfigSpec,
  type EtcdSpecSpec,
} from "../../../../agent/src/resources/catalog/etcd.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  networkDefinitions,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "../secrets/wait.js";

const routed = [
  "10.0.0.5",
  "192.168.1.1",
  "192.168.1.50",
  "2001:db8:85a3::8a2e:370:7334",
  "2002:db8:85a3::8a2e:370:7335",
];
const current = ["1.3.5.7", ...routed];
const cfg = (c: Partial<EtcdConfigSpec>): EtcdConfigSpec => ({
  advertiseValidSubnets: [],
  advertiseExcludeSubnets: [],
  listenValidSubnets: [],
  listenExcludeSubnets: [],
  image: "img",
  extraArgs: {},
  ...c,
});

test("Talos's cases: advertised and listen addresses", () => {
  assert.deepEqual(etcdAddresses(cfg({}), routed, current), {
    advertised: ["10.0.0.5"],
    listenPeer: ["::"],
    listenClient: ["::"],
  });
  assert.deepEqual(etcdAddresses(cfg({ advertiseExcludeSubnets: ["10.0.0.5"] }), routed, current), {
    advertised: ["192.168.1.1"],
    listenPeer: ["::"],
    listenClient: ["::"],
  });
  assert.deepEqual(etcdAddresses(cfg({ advertiseValidSubnets: ["192.168.0.0/16", "1.3.5.7/32"] }), routed, current), {
    advertised: ["192.168.1.1", "192.168.1.50", "1.3.5.7"],
    listenPeer: ["::"],
    listenClient: ["::"],
  });
  assert.deepEqual(
    etcdAddresses(
      cfg({ advertiseValidSubnets: ["192.168.0.0/16"], advertiseExcludeSubnets: ["10.0.0.5", "192.168.1.50"] }),
      routed,
      current,
    )?.advertised,
    ["192.168.1.1"],
  );
  assert.deepEqual(
    etcdAddresses(
      cfg({ advertiseValidSubnets: ["192.168.0.0/16", "2001::/16"], listenValidSubnets: ["192.168.0.0/16"] }),
      routed,
      current,
    ),
    {
      advertised: ["192.168.1.1", "192.168.1.50", "2001:db8:85a3::8a2e:370:7334"],
      listenPeer: ["192.168.1.1", "192.168.1.50"],
      listenClient: ["::1", "192.168.1.1", "192.168.1.50"],
    },
  );
});

test("an IPv4-only node listens on 0.0.0.0; nothing routed yet, no spec", () => {
  assert.deepEqual(etcdAddresses(cfg({}), ["10.0.0.5"], ["10.0.0.5"]), {
    advertised: ["10.0.0.5"],
    listenPeer: ["0.0.0.0"],
    listenClient: ["0.0.0.0"],
  });
  assert.deepEqual(
    etcdAddresses(cfg({ listenValidSubnets: ["10.0.0.0/8"] }), ["10.0.0.5"], ["10.0.0.5"])?.listenClient,
    ["127.0.0.1", "10.0.0.5"],
  );
  assert.equal(etcdAddresses(cfg({}), [], ["10.0.0.5"]), undefined);
  assert.equal(etcdAddresses(cfg({ advertiseValidSubnets: ["172.16.0.0/12"] }), ["10.0.0.5"], ["10.0.0.5"]), undefined);
});

test("filterIPs: CIDRs in order, ! removing what was included, bare IPs", () => {
  assert.deepEqual(filterIPs(["10.0.0.1", "10.0.0.2", "fd00::1"], ["!10.0.0.2"]), []);
  assert.deepEqual(filterIPs(["10.0.0.1", "10.0.0.2", "fd00::1"], ["::/0", "0.0.0.0/0", "!10.0.0.2"]), [
    "fd00::1",
    "10.0.0.1",
  ]);
  assert.deepEqual(filterIPs(["10.0.0.1", "10.0.0.2", "fd00::1"], ["10.0.0.0/24", "!10.0.0.1/32"]), ["10.0.0.2"]);
});

test("the controller: name from the hostname, addresses from routed/current no-k8s", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new EtcdSpecController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  state.modify(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId, "test", () =>
    cfg({ image: "gcr.io/etcd-development/etcd:v3.5.13", extraArgs: { a: "b" } }),
  );
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, "test", () => ({
    hostname: "cp-1",
    domainname: "",
  }));
  state.modify(NETWORK_NAMESPACE, NodeAddressType, "routed-no-k8s", "test", () => ({ addresses: ["10.5.0.2/24"] }));
  state.modify(NETWORK_NAMESPACE, NodeAddressType, "current-no-k8s", "test", () => ({ addresses: ["10.5.0.2/24"] }));
  const spec = await until("EtcdSpec", () => state.get<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId)?.spec);
  assert.deepEqual(spec, {
    name: "cp-1",
    advertisedAddresses: ["10.5.0.2"],
    listenPeerAddresses: ["0.0.0.0"],
    listenClientAddresses: ["0.0.0.0"],
    image: "gcr.io/etcd-development/etcd:v3.5.13",
    extraArgs: { a: "b" },
  });
});
