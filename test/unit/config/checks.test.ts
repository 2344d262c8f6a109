// Go durations as config fields spell them: both of Go's micro signs (U+00B5 and U+03BC), written as
// escapes in checks.ts so the bundle stays Latin-1 (scripts/bundle.mjs).
import assert from "node:assert/strict";
import { test } from "node:test";
import { durationMs, isDuration } from "../../../agent/src/config/checks.js";

test("durations with either micro sign, and the other units, parse as Go's time.ParseDuration does", () => {
  assert.equal(durationMs("250\u00b5s"), 0.25);
  assert.equal(durationMs("250\u03bcs"), 0.25);
  assert.equal(durationMs("1h30m"), 5_400_000);
  assert.equal(durationMs("1.5s"), 1500);
  assert.equal(durationMs("-2ms500us"), -2.5);
  assert.equal(durationMs("0"), 0);
  assert.equal(isDuration("250\u00e6s"), false);
  assert.equal(durationMs("10 s"), undefined);
});
