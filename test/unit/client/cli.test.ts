import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";
import { parseCallFlags, resolveType } from "../../../agent/src/client/cli.js";

test("talosctl global flags and command flags", () => {
  const f = parseCallFlags(
    ["-n", "10.0.0.1,10.0.0.2", "--insecure", "get", "addresses", "-o=yaml", "--dry-run"],
    ["-o"],
    ["--dry-run"],
  );
  assert.deepEqual(f.nodes, ["10.0.0.1", "10.0.0.2"]);
  assert.equal(f.insecure, true);
  assert.deepEqual(f.positional, ["get", "addresses"]);
  assert.equal(f.values["-o"], "yaml");
  assert.equal(f.values["--dry-run"], true);
  assert.throws(() => parseCallFlags(["--bogus"]), InvalidInputError);
  assert.throws(() => parseCallFlags(["-e"]), InvalidInputError);
});

test("global flags: short and long spellings, lists over repeats, a command cannot shadow them", () => {
  const f = parseCallFlags(
    [
      "-e",
      "a, b",
      "--endpoints=c",
      "--nodes",
      "n1",
      "-i=false",
      "--talosconfig=tc",
      "--context",
      "ctx",
      "-m",
      "staged",
    ],
    ["-m", "-n"],
  );
  assert.deepEqual(f.endpoints, ["a", "b", "c"]);
  assert.deepEqual(f.nodes, ["n1"]);
  assert.equal(f.insecure, false);
  assert.equal(f.talosconfig, "tc");
  assert.equal(f.context, "ctx");
  assert.deepEqual(f.values, { "-m": "staged" });
  assert.deepEqual(parseCallFlags(["-n", "x"], ["-n"]).nodes, ["x"]);
});

test("resource words resolve by id or alias, case-insensitively", () => {
  const defs = [
    {
      id: "addressstatuses.net.talos.dev",
      type: "AddressStatuses.net.talos.dev",
      displayType: "AddressStatus",
      defaultNamespace: "network",
      allAliases: ["addressstatuses", "address", "addresses", "as"],
    },
    {
      id: "addressspecs.net.talos.dev",
      type: "AddressSpecs.net.talos.dev",
      displayType: "AddressSpec",
      defaultNamespace: "network",
      allAliases: ["addressspecs", "as"],
    },
  ];
  assert.equal(resolveType(defs, "Addresses").type, "AddressStatuses.net.talos.dev");
  assert.equal(resolveType(defs, "addressspecs.net.talos.dev").type, "AddressSpecs.net.talos.dev");
  assert.throws(() => resolveType(defs, "as"), InvalidInputError);
  assert.throws(() => resolveType(defs, "nope"), NotFoundError);
});
