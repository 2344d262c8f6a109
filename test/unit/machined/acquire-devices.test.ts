// A platform's configuration volume (nocloud's cidata, metal-iso) is looked for by its label
// only once DevicesStatus is ready, as Talos's platforms wait for udev (labels come from it).
import assert from "node:assert/strict";
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
  list: () => [],
};

function deps(state: ResourceState, platform: "metal" | "nocloud", cmdline: Record<string, string>): AcquireDeps {
  return {
    platform: { name: platform, mode: "metal" },
    cmdline: new Map(Object.entries(cmdline).map(([k, v]) => [k, [v]])),
    state,
    mounter,
    mountDir: path.join(os.tmpdir(), `basalt-acquire-${process.pid}`),
    identity: () => ({ uuid: "", serial: "" }),
    meta: () => undefined,
    signal: new AbortController().signal,
    log: logger("test"),
  };
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

for (const [platform, cmdline] of [["nocloud", {}], ["metal", { "talos.config": "metal-iso" }]] as const) {
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
    state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({ ready: false }));
    await ticks(50);
    assert.equal(settled, false, "not ready yet");
    state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({ ready: true }));
    const r = await acquired;
    // This host has no volume labelled cidata or metal-iso: the look-up ran and found none.
    if (platform === "nocloud") assert.deepEqual(r, { a: { metadata: { platform: "nocloud" } } });
    else assert.match(String((r as { err: Error }).err?.message), /failed to find metal-iso iso: no volume labelled metal-iso/);
  });
}
