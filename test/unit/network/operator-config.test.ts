// network.OperatorConfigController: DHCPv6 operators from `dhcpOptions.ipv6`, and no
// default DHCPv4 on a link the platform configures (Talos's OperatorConfigController);
// network.OperatorVIPConfigController: vip operators from `vip.ip`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../../agent/src/config/load.js";
import {
  OperatorConfigController,
  OperatorVipConfigController,
} from "../../../agent/src/controllers/network/config-layers.js";
import { parseCmdlineNetworking } from "../../../agent/src/network/cmdline.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../../agent/src/resources/catalog/config.js";
import {
  LinkSpecType,
  LinkStatusType,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  OperatorSpecType,
  type OperatorSpecSpec,
  networkDefinitions,
  operatorSpecDefinition,
} from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { yamlSpec } from "../../../agent/src/resources/definitions.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

test("dhcpOptions.ipv6 adds a dhcp6 OperatorSpec (DUID, route metric); a platform-configured link gets no default DHCPv4", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  runtime.register(new OperatorConfigController(parseCmdlineNetworking("")));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  for (const [name, index] of [
    ["eth0", 2],
    ["eth1", 3],
    ["eth2", 4],
  ] as const) {
    state.modify(
      NETWORK_NAMESPACE,
      LinkStatusType,
      name,
      "network.LinkStatusController",
      () => ({ index, type: "ether", kind: "", hardwareAddr: "", permanentAddr: "" }) as never,
    );
  }
  state.modify(
    NETWORK_CONFIG_NAMESPACE,
    LinkSpecType,
    "platform/eth1",
    "network.PlatformConfigController",
    () => ({ name: "eth1", logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "platform" }) as never,
  );
  const config = `version: v1alpha1
machine:
    type: worker
    network:
        interfaces:
            - interface: eth0
              dhcp: true
              dhcpOptions: {ipv6: true, routeMetric: 300, duidv6: "000100012e0fb0c5525400123456"}
`;
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
    loadConfig(Buffer.from(config)),
  );
  const specs = async () => {
    await runtime.whenIdle();
    return Object.fromEntries(
      state.list(NETWORK_CONFIG_NAMESPACE, OperatorSpecType).map((r) => [r.metadata.id, r.spec]),
    );
  };
  assert.deepEqual(await specs(), {
    "configuration/dhcp4/eth0": {
      operator: "dhcp4",
      linkName: "eth0",
      requireUp: true,
      dhcp4: { routeMetric: 300 },
      layer: "configuration",
    },
    "configuration/dhcp6/eth0": {
      operator: "dhcp6",
      linkName: "eth0",
      requireUp: true,
      dhcp6: { DUID: "000100012e0fb0c5525400123456", routeMetric: 300 },
      layer: "configuration",
    },
    "default/dhcp4/eth2": {
      operator: "dhcp4",
      linkName: "eth2",
      requireUp: true,
      dhcp4: { routeMetric: 1024 },
      layer: "default",
    },
  });
  state.destroy(NETWORK_CONFIG_NAMESPACE, LinkSpecType, "platform/eth1", { owner: "network.PlatformConfigController" });
  assert.deepEqual(Object.keys(await specs()).sort(), [
    "configuration/dhcp4/eth0",
    "configuration/dhcp6/eth0",
    "default/dhcp4/eth1",
    "default/dhcp4/eth2",
  ]);
});

test("vip.ip on an interface and on a vlan: a vip OperatorSpec each with gratuitous ARP (Talos's OperatorVIPConfigController); a cloud provider's VIP is not built", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  runtime.register(new OperatorVipConfigController(parseCmdlineNetworking("")));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const config = `version: v1alpha1
machine:
    type: controlplane
    network:
        interfaces:
            - interface: eth0
              dhcp: true
              vip: {ip: 10.5.0.100}
              vlans:
                  - vlanId: 100
                    addresses: [172.20.0.2/24]
                    vip: {ip: 172.20.0.100}
            - interface: eth1
              dhcp: true
              vip: {ip: 10.6.0.100, hcloud: {apiToken: secret}}
`;
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
    loadConfig(Buffer.from(config)),
  );
  await runtime.whenIdle();
  const specs = state.list(NETWORK_CONFIG_NAMESPACE, OperatorSpecType);
  assert.deepEqual(Object.fromEntries(specs.map((r) => [r.metadata.id, r.spec])), {
    "configuration/vip/eth0": {
      operator: "vip",
      linkName: "eth0",
      requireUp: true,
      vip: { ip: "10.5.0.100", gratuitousARP: true },
      layer: "configuration",
    },
    "configuration/vip/eth0.100": {
      operator: "vip",
      linkName: "eth0.100",
      requireUp: true,
      vip: { ip: "172.20.0.100", gratuitousARP: true },
      layer: "configuration",
    },
  });
  assert.equal(
    yamlSpec(operatorSpecDefinition, specs[0]!.spec as OperatorSpecSpec),
    "operator: vip\nlinkName: eth0\nrequireUp: true\nvip:\n    ip: 10.5.0.100\n    gratuitousARP: true\nlayer: configuration\n",
  );
});
