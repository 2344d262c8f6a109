// NodeAddresses as Talos 1.7.6 computes them, with the `no-k8s` / `only-k8s` filtered
// variants from the cluster's pod and service subnets (cases follow Talos's own
// NodeAddress filter test, without the platform's external addresses).
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../../agent/src/config/load.js";
import { ADDRESS_STATUS_CONTROLLER } from "../../../agent/src/controllers/network/address-status.js";
import { NodeAddressController, mergeAccumulative } from "../../../agent/src/controllers/network/node-address.js";
import { NodeAddressFilterController } from "../../../agent/src/controllers/network/node-address-filter.js";
import { prefixContains } from "../../../agent/src/network/ip-prefix.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../../agent/src/resources/catalog/config.js";
import {
  AddressStatusType,
  LinkStatusType,
  NETWORK_NAMESPACE,
  NodeAddressFilterType,
  NodeAddressType,
  networkDefinitions,
} from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

test("prefixContains: bits, byte boundaries and families", () => {
  assert.equal(prefixContains("10.96.0.0/12", "10.111.255.255"), true);
  assert.equal(prefixContains("10.96.0.0/12", "10.112.0.0"), false);
  assert.equal(prefixContains("0.0.0.0/0", "8.8.8.8"), true);
  assert.equal(prefixContains("10.0.0.0/8", "fd00::1"), false);
  assert.equal(prefixContains("fd00:10:96::/112", "fd00:10:96::ffff"), true);
  assert.equal(prefixContains("fd00:10:96::/112", "fd00:10:96::1:0"), false);
  assert.equal(prefixContains("192.168.3.7/32", "192.168.3.7"), true);
});

test("mergeAccumulative keeps what is recorded and inserts new IPs in order, one prefix per IP", () => {
  assert.deepEqual(mergeAccumulative(["10.0.0.2/8", "fd00::1/64"], ["10.0.0.2/24", "10.0.0.1/8", "192.168.1.1/24"]), [
    "10.0.0.1/8",
    "10.0.0.2/8",
    "192.168.1.1/24",
    "fd00::1/64",
  ]);
});

const TALOS_ADDRESSES = {
  eth0: [
    "10.0.0.1/8",
    "25.3.7.9/32",
    "2001:470:6d:30e:4a62:b3ba:180b:b5b8/64",
    "127.0.0.1/8",
    "fdae:41e4:649b:9303:7886:731d:1ce9:4d4/128",
  ],
  eth1: ["10.0.0.2/8", "192.168.3.7/24"],
};
const V6 = "2001:470:6d:30e:4a62:b3ba:180b:b5b8/64";
const SIDEROLINK = "fdae:41e4:649b:9303:7886:731d:1ce9:4d4/128";

test("NodeAddress default/current/routed/accumulative and their -no-k8s/-only-k8s forms follow the cluster's subnets", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  runtime.register(new NodeAddressController());
  runtime.register(new NodeAddressFilterController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);

  // eth0 up with carrier, eth1 without.
  for (const [name, index, linkState] of [
    ["eth0", 1, true],
    ["eth1", 2, false],
  ] as const) {
    state.modify(
      NETWORK_NAMESPACE,
      LinkStatusType,
      name,
      "network.LinkStatusController",
      () => ({ index, type: "ether", kind: "", operationalState: "up", linkState }) as never,
    );
    for (const address of TALOS_ADDRESSES[name]) {
      state.modify(
        NETWORK_NAMESPACE,
        AddressStatusType,
        `${name}/${address}`,
        ADDRESS_STATUS_CONTROLLER,
        () =>
          ({
            address,
            linkIndex: index,
            linkName: name,
            family: address.includes(":") ? "inet6" : "inet4",
            scope: "global",
            flags: "permanent",
          }) as never,
      );
    }
  }
  const nodeAddresses = async () => {
    await runtime.whenIdle();
    return Object.fromEntries(
      state
        .list<{ addresses: string[] }>(NETWORK_NAMESPACE, NodeAddressType)
        .map((r) => [r.metadata.id, r.spec.addresses]),
    );
  };
  const unfiltered = {
    default: ["10.0.0.1/8"],
    current: ["10.0.0.1/8", "25.3.7.9/32", V6, SIDEROLINK],
    routed: ["10.0.0.1/8", "25.3.7.9/32", V6],
    accumulative: ["10.0.0.1/8", "10.0.0.2/8", "25.3.7.9/32", "192.168.3.7/24", V6, SIDEROLINK],
  };
  // No machine config (maintenance): no filters, so no filtered addresses.
  assert.deepEqual(await nodeAddresses(), unfiltered);
  assert.equal(state.list(NETWORK_NAMESPACE, NodeAddressFilterType).length, 0);

  const apply = (cluster: string) =>
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
      loadConfig(Buffer.from(`version: v1alpha1\nmachine:\n    type: worker\n${cluster}`)),
    );
  apply("cluster:\n    network:\n        podSubnets: [10.0.0.0/8]\n        serviceSubnets: [192.168.0.0/16]\n");
  assert.deepEqual(await nodeAddresses(), {
    ...unfiltered,
    "current-no-k8s": ["25.3.7.9/32", V6, SIDEROLINK],
    "routed-no-k8s": ["25.3.7.9/32", V6],
    "accumulative-no-k8s": ["25.3.7.9/32", V6, SIDEROLINK],
    "current-only-k8s": ["10.0.0.1/8"],
    "routed-only-k8s": ["10.0.0.1/8"],
    "accumulative-only-k8s": ["10.0.0.1/8", "10.0.0.2/8", "192.168.3.7/24"],
  });
  const filters = () =>
    Object.fromEntries(state.list(NETWORK_NAMESPACE, NodeAddressFilterType).map((r) => [r.metadata.id, r.spec]));
  assert.deepEqual(filters(), {
    "no-k8s": { includeSubnets: [], excludeSubnets: ["10.0.0.0/8", "192.168.0.0/16"] },
    "only-k8s": { includeSubnets: ["10.0.0.0/8", "192.168.0.0/16"], excludeSubnets: [] },
  });

  // A cluster section without subnets: Talos's defaults 10.244.0.0/16 and 10.96.0.0/12.
  apply("cluster:\n    clusterName: demo\n");
  await runtime.whenIdle();
  assert.deepEqual(filters(), {
    "no-k8s": { includeSubnets: [], excludeSubnets: ["10.244.0.0/16", "10.96.0.0/12"] },
    "only-k8s": { includeSubnets: ["10.244.0.0/16", "10.96.0.0/12"], excludeSubnets: [] },
  });
  const narrowed = await nodeAddresses();
  assert.deepEqual(narrowed["current-no-k8s"], unfiltered.current);
  assert.deepEqual(narrowed["routed-only-k8s"], []);
  // The accumulative lists only grow: what only-k8s recorded under the first subnets stays.
  assert.deepEqual(narrowed["accumulative-only-k8s"], ["10.0.0.1/8", "10.0.0.2/8", "192.168.3.7/24"]);

  // No cluster section: the filters and their addresses go.
  apply("");
  assert.deepEqual(await nodeAddresses(), unfiltered);
  assert.deepEqual(filters(), {});
});
