// Our agent/api protos must describe exactly the published wire contract:
// api.descriptors for the Talos packages, cosi-state.md §1-2 for cosi.resource(.meta).
// The contract files are test data under test/fixtures/talos-api.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";
import { apiRoot, protoDir } from "../../../agent/src/api/index.js";
import { cosiMarkdownFacts, descriptorFacts, diffFacts, loadedFacts, readDescriptorSet, type Facts } from "./facts.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const talosApiDir = path.join(repoRoot, "test/fixtures/talos-api");
const descriptorPath = path.join(talosApiDir, "api.descriptors");
const cosiPath = path.join(talosApiDir, "cosi-state.md");

// Facts about cosi.* come from cosi-state.md, everything else from the descriptor set.
function isCosi(key: string, value: string): boolean {
  return key.startsWith("file ") ? value.startsWith("package=cosi.") : /^\w+ \.cosi\./.test(key);
}

function partition(facts: Facts, cosi: boolean): Facts {
  return new Map([...facts].filter(([k, v]) => isCosi(k, v) === cosi));
}

function assertNoDifferences(diffs: string[], what: string): void {
  assert.equal(diffs.length, 0, `${diffs.length} differences between our protos and ${what}:\n${diffs.join("\n")}`);
}

const ours = () => loadedFacts(apiRoot(), protoDir);

// In Talos v1.7.6's api/resource/definitions/network/network.proto (talosctl v1.7.6 is built with it),
// but missing from the api.descriptors file published at that tag, which predates it.
const newerThanDescriptors = [".talos.resource.definitions.network.HostDNSConfigSpec"];
const describedElsewhere = (key: string) =>
  newerThanDescriptors.some((m) => key.endsWith(` ${m}`) || key.includes(` ${m}.`));

test("agent/api matches api.descriptors: packages, services, methods, messages, fields, enums", () => {
  const files = readDescriptorSet(fs.readFileSync(descriptorPath));
  // google/protobuf/* are protobufjs's bundled well-known types; google/rpc/status.proto is ours and checked.
  const expected = descriptorFacts(files, (name) => !name.startsWith("google/protobuf/"));
  assert.ok(expected.has("service .machine.MachineService"), "descriptor set decoded without machine.MachineService");
  const checked = new Map([...partition(ours(), false)].filter(([k]) => !describedElsewhere(k)));
  assertNoDifferences(diffFacts(expected, checked), "api.descriptors");
});

test("agent/api matches cosi-state.md §1-2 for cosi.resource and cosi.resource.meta", () => {
  const expected = cosiMarkdownFacts(fs.readFileSync(cosiPath, "utf8"));
  assert.ok(expected.has("service .cosi.resource.State"), "cosi-state.md: service table not found");
  assert.ok(expected.has("message .cosi.resource.meta.ResourceDefinitionSpec"), "cosi-state.md: meta tables not found");
  assertNoDifferences(diffFacts(expected, partition(ours(), true)), "cosi-state.md");
});

// The only declarations of api.descriptors we leave out are common.proto's
// deprecation-marker extensions of google.protobuf.*Options (annotations for
// code generators; nothing on the wire). Fail if anything else is an extension.
test("api.descriptors holds no extensions other than the google.protobuf.*Options markers we omit", () => {
  const files = readDescriptorSet(fs.readFileSync(descriptorPath));
  const unexpected: string[] = [];
  for (const file of files) {
    if (file.name.startsWith("google/protobuf/")) continue;
    for (const ext of file.extension ?? []) {
      if (!/^\.google\.protobuf\.\w+Options$/.test(ext.extendee ?? ""))
        unexpected.push(`${file.name}: ${ext.name} extends ${ext.extendee}`);
    }
  }
  assert.deepEqual(unexpected, []);
});
