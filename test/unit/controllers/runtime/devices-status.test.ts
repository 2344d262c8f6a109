// DevicesStatus and what waits for it: ready once udevd is healthy (at once without udevd),
// and until then the link controllers neither publish nor bring up a link, so udev can still
// rename it (the kernel refuses to rename a link that is up).
import assert from "node:assert/strict";
import { test } from "node:test";
import { networkControllers } from "../../../../agent/src/controllers/network/index.js";
import { DevicesStatusController } from "../../../../agent/src/controllers/runtime/devices-status.js";
import { networkDefinitions } from "../../../../agent/src/resources/catalog/network.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  DevicesStatusId,
  DevicesStatusType,
  RUNTIME_NAMESPACE,
  ServiceType,
} from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import type { DhcpTransport } from "../../../../agent/src/network/dhcp4/client.js";
import { FakeNetKernel } from "../../sys/net-fake.js";
import { pathsAt } from "../../../../agent/src/sys/paths.js";

function setup(t: { after(fn: () => Promise<void>): void }) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const ac = new AbortController();
  t.after(async () => {
    ac.abort();
    await runtime.whenIdle();
  });
  const udevd = (healthy: boolean) =>
    state.modify(RUNTIME_NAMESPACE, ServiceType, "udevd", "v1alpha1.ServiceController", () => ({
      running: true,
      healthy,
      unknown: false,
    }));
  const devices = () => state.get<{ ready: boolean }>(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId)?.spec;
  return { state, runtime, start: () => runtime.start(ac.signal), udevd, devices };
}

test("without udevd (the sandbox) the devices are ready at once", async (t) => {
  const { runtime, start, devices } = setup(t);
  runtime.register(new DevicesStatusController({ udevd: false }));
  start();
  await runtime.whenIdle();
  assert.deepEqual(devices(), { ready: true });
});

test("with udevd: nothing until it is healthy, then ready, and ready stays when a later health check fails", async (t) => {
  const { runtime, start, udevd, devices } = setup(t);
  runtime.register(new DevicesStatusController({ udevd: true }));
  start();
  await runtime.whenIdle();
  assert.equal(devices(), undefined, "no udevd service yet");
  udevd(false);
  await runtime.whenIdle();
  assert.equal(devices(), undefined, "udevd running, its first trigger and settle not done");
  udevd(true);
  await runtime.whenIdle();
  assert.deepEqual(devices(), { ready: true });
  udevd(false);
  await runtime.whenIdle();
  assert.deepEqual(devices(), { ready: true });
});

test("links are neither listed nor brought up nor given DHCP until the devices are ready; a link renamed meanwhile is used by its new name", async (t) => {
  const { state, runtime, start, udevd } = setup(t);
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth0", hardwareAddr: "52:54:00:12:34:56" });
  const dhcpLinks: string[] = [];
  const transport = async (link: string): Promise<DhcpTransport> => {
    dhcpLinks.push(link);
    return { send: async () => undefined, onReceive: () => undefined, close: () => undefined };
  };
  for (const c of networkControllers({
    kernel,
    paths: pathsAt("/nonexistent"),
    linkDetails: async () => ({}),
    writeResolvConf: false,
    dhcpOptions: { transport },
  }))
    runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: true }));
  start();
  udevd(false);
  await runtime.whenIdle();
  assert.deepEqual(state.list("network", "LinkStatuses.net.talos.dev"), [], "no LinkStatus");
  // (An address may be added: that does not stop a rename.)
  assert.equal(
    kernel.calls.filter((c) => c.startsWith("setLink") || c.startsWith("createLink")).length,
    0,
    `no link touched: ${kernel.calls.join(", ")}`,
  );
  assert.equal(dhcpLinks.length, 0, "no DHCP");

  // udev's coldplug names the NIC; it is still down, so the kernel takes the new name.
  kernel.renameLink("eth0", "enp0s3");
  udevd(true);
  for (let i = 0; i < 200 && !(kernel.calls.includes("setLinkUp enp0s3 true") && dhcpLinks.length > 0); i++)
    await new Promise((r) => setTimeout(r, 5));
  await runtime.whenIdle();
  assert.deepEqual(
    kernel.calls.filter((c) => c.startsWith("setLinkUp")),
    ["setLinkUp enp0s3 true"],
    "the fake's loopback is already up",
  );
  assert.deepEqual(
    state
      .list("network", "LinkStatuses.net.talos.dev")
      .map((r) => r.metadata.id)
      .sort(),
    ["enp0s3", "lo"],
  );
  assert.deepEqual(dhcpLinks, ["enp0s3"]);
  assert.throws(() => kernel.renameLink("enp0s3", "eth0"), /it is up/, "once up, a link cannot be renamed");
});
