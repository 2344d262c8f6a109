import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { nodePlatform } from "../../../agent/src/cmd/machined.js";
import { describeError, SystemError } from "../../../agent/src/errors.js";
import { detectPlatform, parseCmdline, readCmdline } from "../../../agent/src/machined/platform.js";

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

test("readCmdline parses the file; one that cannot be read is an error naming the file and its cause", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmdline-"));
  try {
    const file = path.join(dir, "cmdline");
    fs.writeFileSync(file, "quiet talos.platform=metal\n");
    assert.deepEqual(readCmdline(file).get("talos.platform"), ["metal"]);
    const missing = path.join(dir, "missing");
    assert.throws(
      () => readCmdline(missing),
      (err: unknown) =>
        err instanceof SystemError &&
        err.message === `could not read the kernel command line ${missing}` &&
        (err.cause as NodeJS.ErrnoException).code === "ENOENT" &&
        /ENOENT/.test(describeError(err)),
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("machined's platform: env PLATFORM alone is enough (the cmdline is not read); without it the cmdline is read and its error kept", () => {
  const unreadable = () => {
    throw new SystemError("could not read the kernel command line /proc/cmdline");
  };
  assert.deepEqual(nodePlatform({ PLATFORM: "metal" }, unreadable), { name: "metal", mode: "metal" });
  assert.throws(() => nodePlatform({}, unreadable), /could not read the kernel command line/);
  assert.deepEqual(
    nodePlatform({}, () => parseCmdline("talos.platform=nocloud")),
    { name: "nocloud", mode: "cloud" },
  );
});
