import assert from "node:assert/strict";
import { test } from "node:test";
import { configDiff, goDuration, tryTimeoutMs } from "../../../../agent/src/machined/apply/index.js";
import { yamlPathAt } from "../../../../agent/src/machined/apply/diff.js";

test("configDiff: unified hunks with three lines of context and line ranges", () => {
  const a = [
    "a:",
    "  b: 1",
    "  c: 2",
    "  d: 3",
    "  e: 4",
    "  f: 5",
    "  g: 6",
    "  h: 7",
    "  i: 8",
    "  j: 9",
    "  k: 10",
  ].join("\n");
  const b = a.replace("  c: 2", "  c: 20").replace("  k: 10", "  k: 10\n  l: 11");
  assert.equal(
    configDiff(a, b),
    [
      "--- a",
      "+++ b",
      "@@ -1,6 +1,6 @@ a.c",
      " a:",
      "   b: 1",
      "-  c: 2",
      "+  c: 20",
      "   d: 3",
      "   e: 4",
      "   f: 5",
      "@@ -9,3 +9,4 @@ a.l",
      "   i: 8",
      "   j: 9",
      "   k: 10",
      "+  l: 11",
    ].join("\n"),
  );
  assert.equal(configDiff("x: 1\n", "x: 1\n"), "No changes.");
  assert.equal(configDiff("", "x: 1\n"), "--- a\n+++ b\n@@ -0,0 +1,1 @@ x\n+x: 1");
});

test("yamlPathAt: keys under maps and list items", () => {
  const lines = [
    "machine:",
    "    network:",
    "        interfaces:",
    "            - interface: eth0",
    "              dhcp: true",
    "    # note",
    "    env: {}",
  ];
  assert.equal(yamlPathAt(lines, 4), "machine.network.interfaces.dhcp");
  assert.equal(yamlPathAt(lines, 6), "machine.env");
  assert.equal(yamlPathAt(lines, 0), "machine");
});

test("durations: protobuf in, Go's String() out", () => {
  assert.equal(tryTimeoutMs(null), 60_000);
  assert.equal(tryTimeoutMs({ seconds: "30", nanos: 500_000_000 }), 30_500);
  assert.equal(tryTimeoutMs({ seconds: 0, nanos: 0 }), 0, "a present zero duration is used, as Talos does");
  assert.deepEqual([60_000, 30_000, 90_000, 3_600_000, 1_500, 0.5, 250, 0, -2_000, 3_723_400].map(goDuration), [
    "1m0s",
    "30s",
    "1m30s",
    "1h0m0s",
    "1.5s",
    "500µs",
    "250ms",
    "0s",
    "-2s",
    "1h2m3.4s",
  ]);
});
