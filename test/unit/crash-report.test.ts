import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const module = pathToFileURL(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/crash-report.js"),
).href;

/** Runs `crash` (a statement) in a Node process with the crash report installed as "machined". */
function crashWith(crash: string) {
  const script = `const { installCrashReport } = await import(${JSON.stringify(module)}); installCrashReport("machined"); ${crash}`;
  return spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
}

test("an uncaught exception ends the process with status 1, its cause chain on one line and its stack", () => {
  const r = crashWith(
    `setTimeout(() => { throw new Error("reply parse failed", { cause: new Error("truncated attribute") }); });`,
  );
  assert.equal(r.status, 1);
  const lines = r.stderr.split("\n");
  assert.equal(lines[0], "basalt machined: fatal uncaughtException: reply parse failed: truncated attribute");
  assert.match(r.stderr, /Error: reply parse failed\n\s+at Timeout\._onTimeout/);
  assert.match(r.stderr, /\[cause\]: Error: truncated attribute/);
});

test("an unhandled rejection ends the process the same way", () => {
  const r = crashWith(`Promise.reject(new RangeError("bad port"));`);
  assert.equal(r.status, 1);
  assert.equal(r.stderr.split("\n")[0], "basalt machined: fatal unhandledRejection: bad port");
  assert.match(r.stderr, /RangeError: bad port\n\s+at /);
});
