// A platform's configuration volume (nocloud's cidata, metal-iso) is looked for by its label
// only once DevicesStatus is ready, as Talos's platforms wait for udev (labels come from it);
// a talos.config= URL is fetched only once the network is (the boot itself no longer waits for it).
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { acquireFromPlatform, type AcquireDeps } from "../../../agent/src/machined/config-source/acquire.js";
import { logger } from "../../../agent/src/log.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { DevicesStatusId, DevicesStatusType, RUNTIME_NAMESPACE } from "../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import type { Mounter } from "../../../agent/src/sys/mount.js";

// No volume carries the label on this host, so nothing is ever mounted.
const mounter: Mounter = {
  mount: async () => assert.fail("nothing to mount"),
  unmount: async () => undefined,
  makeShared: async () => assert.fail("nothing to share"),
  list: () => [],
};

function deps(
  state: ResourceState,
  platform: "metal" | "nocloud",
  cmdline: Record<string, string>,
  networkReady: () => Promise<void> = async () => undefined,
): AcquireDeps {
  return {
    platform: { name: platform, mode: "metal" },
    cmdline: new Map(Object.entries(cmdline).map(([k, v]) => [k, [v]])),
    state,
    mounter,
    mountDir: path.join(os.tmpdir(), `basalt-acquire-${process.pid}`),
    identity: () => ({ uuid: "", serial: "" }),
    meta: () => undefined,
    signal: new AbortController().signal,
    networkReady,
    log: logger("test"),
  };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

for (const [platform, cmdline] of [
  ["nocloud", {}],
  ["metal", { "talos.config": "metal-iso" }],
] as const) {
  test(`${platform}${platform === "metal" ? " (metal-iso)" : ""}: no volume is looked for until the devices are ready`, async () => {
    const state = new ResourceState();
    registerCatalog(state);
    let settled = false;
    const acquired = acquireFromPlatform(deps(state, platform, cmdline), true).then(
      (a) => ((settled = true), { a }),
      (err: unknown) => ((settled = true), { err }),
    );
    await ticks(50);
    assert.equal(settled, false, "waiting for DevicesStatus");
    state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({
      ready: false,
    }));
    await ticks(50);
    assert.equal(settled, false, "not ready yet");
    state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({
      ready: true,
    }));
    const r = await acquired;
    // This host has no volume labelled cidata or metal-iso: the look-up ran and found none.
    if (platform === "nocloud") assert.deepEqual(r, { a: { metadata: { platform: "nocloud" } } });
    else
      assert.match(
        String((r as { err: Error }).err?.message),
        /failed to find metal-iso iso: no volume labelled metal-iso/,
      );
  });
}

test("metal talos.config= URL: nothing is fetched until the network is ready", async (t) => {
  let requests = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    res.end("machine: {}\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  let networkUp = () => {};
  const network = new Promise<void>((resolve) => (networkUp = resolve));
  const state = new ResourceState();
  registerCatalog(state);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/config`;
  const acquired = acquireFromPlatform(
    deps(state, "metal", { "talos.config": url }, () => network),
    true,
  );
  await ticks(50);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(requests, 0, "no request before the network is ready");
  networkUp();
  const a = await acquired;
  assert.equal(requests, 1);
  assert.equal(a.config?.data.toString("utf8"), "machine: {}\n");
  assert.equal(a.config?.source, url);
});
