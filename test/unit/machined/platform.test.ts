import assert from "node:assert/strict";
import { test } from "node:test";
import { detectPlatform, parseCmdline } from "../../../agent/src/machined/platform.js";

test("kernel arguments: repeated keys keep every value, bare words are empty, quoted values keep their blanks", () => {
  const args = parseCmdline('console=tty0 console=ttyS0 quiet talos.platform=metal talos.config="http://x/a b.yaml"\n');
  assert.deepEqual(args.get("console"), ["tty0", "ttyS0"]);
  assert.deepEqual(args.get("quiet"), [""]);
  assert.deepEqual(args.get("talos.config"), ["http://x/a b.yaml"]);
  assert.deepEqual(detectPlatform(args, {}), { name: "metal", mode: "metal" });
});

test("an unknown or missing platform is refused", () => {
  assert.throws(() => detectPlatform(parseCmdline("talos.platform=mars"), {}), /unknown platform "mars"/);
  assert.throws(() => detectPlatform(parseCmdline(""), {}), /no platform given/);
});
