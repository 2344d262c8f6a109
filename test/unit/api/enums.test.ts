import assert from "node:assert/strict";
import test from "node:test";
import { ApplyMode, applyModeName, applyModeNames } from "../../../agent/src/api/enums.js";
import { apiRoot } from "../../../agent/src/api/index.js";

test("ApplyMode matches machine.ApplyConfigurationRequest.Mode in agent/api", () => {
  const loaded = apiRoot().lookupEnum("machine.ApplyConfigurationRequest.Mode").values;
  assert.deepEqual({ ...ApplyMode }, { ...loaded });
});

test("every ApplyMode has exactly one talosctl name, and names map back to their numbers", () => {
  assert.deepEqual([...applyModeNames.values()].sort(), Object.values(ApplyMode).sort());
  assert.equal(applyModeName(ApplyMode.NO_REBOOT), "no-reboot");
  assert.equal(applyModeNames.get("staged"), ApplyMode.STAGED);
  assert.equal(applyModeName(42), "42");
});
