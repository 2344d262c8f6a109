import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { readFileIfExists, writeFileAtomic } from "../../../agent/src/sys/atomic-file.js";

test("concurrent atomic writes of one file both succeed and leave one whole version, no temporary files", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "basalt-atomic-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, "state", "config.yaml");
  const versions = ["first\n".repeat(1000), "second\n".repeat(1000)];
  await Promise.all(versions.map((v) => writeFileAtomic(file, v)));
  assert.ok(versions.includes(await readFile(file, "utf8")));
  assert.deepEqual(await readdir(path.dirname(file)), ["config.yaml"]);
  assert.equal(await readFileIfExists(path.join(dir, "absent")), undefined);
});
