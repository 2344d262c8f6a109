// NetworkChangeHold: holds end by their release or their bound, and the spec
// controllers change the kernel only once none is pending.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AddressSpecController } from "../../../agent/src/controllers/network/address-spec.js";
import { NetworkChangeHold } from "../../../agent/src/controllers/network/change-hold.js";
import { RouteSpecController } from "../../../agent/src/controllers/network/route-spec.js";
import { type AddressSpecSpec, networkDefinitions } from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { registerDefinitions } from "../../../agent/src/resources/definitions.js";
import { newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeNetKernel } from "../sys/net-fake.js";

const OWNER = { owner: "test" };

test("released() waits for every pending hold; a hold past its bound ends and says so", async () => {
  const hold = new NetworkChangeHold();
  await hold.released();
  const first = hold.hold(60_000);
  let expired = 0;
  hold.hold(1, () => expired++);
  const order: string[] = [];
  const done = hold.released().then(() => order.push("released"));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(expired, 1);
  assert.deepEqual(order, []);
  first();
  await done;
  assert.deepEqual(order, ["released"]);
});

test("the address spec controller leaves the kernel alone while held, then removes the address", async (t) => {
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth0" });
  const state = new ResourceState();
  registerDefinitions(state, networkDefinitions);
  const hold = new NetworkChangeHold();
  const runtime = new ControllerRuntime(state);
  runtime.register(new AddressSpecController(kernel, hold));
  runtime.register(new RouteSpecController(kernel, hold));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const spec = (address: string): AddressSpecSpec => ({
    address,
    linkName: "eth0",
    family: "inet4",
    scope: "global",
    flags: "permanent",
    layer: "configuration",
  });
  state.create(
    newResource("network", "AddressSpecs.net.talos.dev", "eth0/192.0.2.10/24", spec("192.0.2.10/24")),
    OWNER,
  );
  await runtime.whenIdle();
  const addrs = () => kernel.addresses.map((a) => `${a.address}/${a.prefixLen}`).sort();
  assert.deepEqual(addrs(), ["192.0.2.10/24"]);

  const release = hold.hold(60_000);
  state.destroy("network", "AddressSpecs.net.talos.dev", "eth0/192.0.2.10/24", OWNER);
  state.create(
    newResource("network", "AddressSpecs.net.talos.dev", "eth0/192.0.2.11/24", spec("192.0.2.11/24")),
    OWNER,
  );
  // Both controllers have started their rounds and wait; a kernel event changes nothing either.
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(addrs(), ["192.0.2.10/24"]);
  const calls = kernel.calls.length;
  release();
  await hold.released();
  for (let i = 0; i < 200 && addrs().join() !== "192.0.2.11/24"; i++) await new Promise((r) => setTimeout(r, 5));
  await runtime.whenIdle();
  assert.deepEqual(addrs(), ["192.0.2.11/24"]);
  assert.deepEqual(
    kernel.calls.slice(calls).filter((c) => /Address/.test(c)),
    ["removeAddress eth0 192.0.2.10/24", "addAddress eth0 192.0.2.11/24"],
  );
});
