// The boot's wait for a node address (before the initialize sequence) starts once the devices are
// ready: until udevd has named the links none is brought up, so no lease can come sooner.
import assert from "node:assert/strict";
import { test } from "node:test";
import { networking } from "../../../agent/src/cmd/networking.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { DevicesStatusId, DevicesStatusType, RUNTIME_NAMESPACE } from "../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";

test("networking's ready: the address wait (here 1 ms) begins only when DevicesStatus is ready", async () => {
  const state = new ResourceState();
  registerCatalog(state);
  const { ready } = networking(pathsAt("/nonexistent"), { node: false, waitForAddressMs: 1 });
  let done = false;
  const waiting = ready!(state, new AbortController().signal).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(done, false, "fifty times the address limit passed: still waiting for the devices");
  state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({
    ready: true,
  }));
  await waiting;
  assert.equal(done, true);
});
