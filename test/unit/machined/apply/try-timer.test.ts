import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { TryModeTimer } from "../../../../agent/src/machined/apply/index.js";

const previous = loadConfig(Buffer.from("version: v1alpha1\nmachine:\n    type: worker\n"));
const other = loadConfig(Buffer.from("version: v1alpha1\nmachine:\n    type: controlplane\n"));

test("TryModeTimer reverts to the held config when the timeout passes", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
  const reverted: unknown[] = [];
  const timer = new TryModeTimer((c) => reverted.push(c));
  timer.start(previous, 60_000);
  t.mock.timers.tick(59_999);
  assert.deepEqual(reverted, []);
  assert.equal(timer.pending, true);
  t.mock.timers.tick(1);
  assert.deepEqual(reverted, [previous]);
  assert.equal(timer.pending, false);
});

test("confirming (cancel) stops the rollback; a second try replaces the first", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
  const reverted: unknown[] = [];
  const timer = new TryModeTimer((c) => reverted.push(c));
  timer.start(previous, 1_000);
  assert.equal(timer.cancel(), true);
  assert.equal(timer.cancel(), false);
  t.mock.timers.tick(2_000);
  assert.deepEqual(reverted, []);
  timer.start(previous, 1_000);
  timer.start(other, 5_000);
  t.mock.timers.tick(1_000);
  assert.deepEqual(reverted, []);
  t.mock.timers.tick(4_000);
  assert.deepEqual(reverted, [other]);
});

test("timeouts longer than setTimeout allows are waited in steps; abort cancels", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "Date"] });
  const reverted: unknown[] = [];
  const ac = new AbortController();
  const timer = new TryModeTimer((c) => reverted.push(c), ac.signal);
  const thirtyDays = 30 * 24 * 3600 * 1000;
  timer.start(previous, thirtyDays);
  t.mock.timers.tick(2 ** 31);
  assert.deepEqual(reverted, [], "not fired at setTimeout's limit");
  t.mock.timers.tick(thirtyDays - 2 ** 31);
  assert.deepEqual(reverted, [previous]);
  timer.start(previous, 1_000);
  ac.abort();
  t.mock.timers.tick(1_000);
  assert.equal(reverted.length, 1);
});
