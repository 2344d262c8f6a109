import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../agent/src/errors.js";
import { parseArgs, parseFlags } from "../../agent/src/flags.js";

test("parseArgs: spellings share keys; inline and separate values; booleans take =false; lists split, trim and accumulate", () => {
  const spellings = {
    "-o": { key: "output", kind: "string" as const },
    "--output": { key: "output", kind: "string" as const },
    "--force": { key: "force", kind: "boolean" as const },
    "--dry-run": { key: "dryRun", kind: "boolean" as const },
    "--ip": { key: "ip", kind: "list" as const },
  };
  const { flags, positional } = parseArgs(
    [
      "a",
      "-o",
      "x",
      "--output=y=z",
      "--force",
      "--dry-run=false",
      "--ip",
      "1.1.1.1, 2.2.2.2,",
      "--ip=3.3.3.3",
      "-",
      "b",
    ],
    spellings,
  );
  assert.deepEqual(flags, { output: "y=z", force: true, dryRun: false, ip: ["1.1.1.1", "2.2.2.2", "3.3.3.3"] });
  assert.deepEqual(positional, ["a", "-", "b"]);
});

test("parseArgs: unknown flags (Object.prototype names too) and missing values are refused, named as spelled", () => {
  const spellings = { "--name": { key: "name", kind: "string" as const } };
  assert.throws(
    () => parseArgs(["-x"], spellings),
    (e: unknown) => e instanceof InvalidInputError && e.message === "unknown flag -x",
  );
  assert.throws(() => parseArgs(["--constructor", "v"], spellings), /unknown flag --constructor/);
  assert.throws(
    () => parseArgs(["--name"], spellings),
    (e: unknown) => e instanceof InvalidInputError && e.message === "flag --name needs a value",
  );
});

test("parseFlags: a bare name is accepted with one or two dashes and stored under the bare name", () => {
  const { flags, positional } = parseFlags(["-o", "out.yaml", "--force", "p"], {
    o: "string",
    force: "boolean",
    roles: "list",
  });
  assert.deepEqual(flags, { o: "out.yaml", force: true });
  assert.deepEqual(positional, ["p"]);
  assert.throws(() => parseFlags(["--bogus"], { o: "string" }), /unknown flag --bogus/);
});
