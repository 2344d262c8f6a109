import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { base62Decode, base62Encode } from "../../../../agent/src/controllers/cluster/base62.js";
import {
  CLUSTER_NAMESPACE,
  machineId,
  NodeIdentityController,
  writeMachineId,
} from "../../../../agent/src/controllers/cluster/node-identity.js";
import { IdentityType, type IdentitySpec } from "../../../../agent/src/resources/catalog/cluster.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

// Vectors from github.com/jxskiss/base62 v1.1.0 (the encoding of Talos's node ids).
const vectors: [string, string][] = [
  ["00ff1e3fabcdef0123456789fedcba9876543210f0e1d2c3b4a5968778695a4b", "LpVa4dollS7wSHO8QIDV2hpuc7fEProRC49mX9HPePA"],
  ["ffff", "fffB"],
  ["1e", "eA"],
];

test("base62: the encoding Talos's node ids use, both ways", () => {
  for (const [hex, text] of vectors) {
    assert.equal(base62Encode(Buffer.from(hex, "hex")), text, hex);
    assert.equal(base62Decode(text).toString("hex"), hex, text);
  }
  assert.throws(() => base62Decode("ab+"), /illegal base62 data at input byte 2/);
});

test("machine-id: the hex of the identity's first 16 bytes", () => {
  assert.equal(machineId(vectors[0]![1]), "00ff1e3fabcdef0123456789fedcba98");
  assert.throws(() => machineId("eA"), /shorter than 16 bytes/);
});

test("NodeIdentityController: waits for STATE, makes the identity once and keeps it; machine-id follows it", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-identity-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const state = new ResourceState();
  registerCatalog(state);
  const machineIds: string[] = [];
  const run = async (id: number) => {
    const runtime = new ControllerRuntime(state);
    runtime.register(
      new NodeIdentityController({
        stateDir: dir,
        container: false,
        writeMachineId: async (text) => void machineIds.push(text),
      }),
    );
    const ac = new AbortController();
    runtime.start(ac.signal);
    await runtime.whenIdle();
    ac.abort();
    return id;
  };
  await run(1);
  assert.equal(state.get(CLUSTER_NAMESPACE, IdentityType, "local"), undefined, "nothing before STATE is mounted");
  state.modify(RUNTIME_NAMESPACE, MountStatusType, "STATE", "test", () => ({
    source: "/dev/vda5",
    target: "/system/state",
    filesystemType: "xfs",
    options: [],
    encrypted: false,
  }));
  await run(2);
  const nodeId = state.get<IdentitySpec>(CLUSTER_NAMESPACE, IdentityType, "local")!.spec.nodeId;
  assert.equal(base62Decode(nodeId).length, 32);
  const file = path.join(dir, "node-identity.yaml");
  assert.equal(readFileSync(file, "utf8"), `nodeId: ${nodeId}\n`);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(machineIds, [machineId(nodeId)]);

  // Another boot with the same STATE: the same identity.
  state.destroy(CLUSTER_NAMESPACE, IdentityType, "local", { owner: "cluster.NodeIdentityController" });
  await run(3);
  assert.equal(state.get<IdentitySpec>(CLUSTER_NAMESPACE, IdentityType, "local")!.spec.nodeId, nodeId);
  assert.deepEqual(machineIds, [machineId(nodeId), machineId(nodeId)]);
});

test("writeMachineId: rewritten in place (a bind mount of it sees the change), 0444, untouched when unchanged", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-machine-id-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, "machine-id");
  writeFileSync(file, "");
  const inode = statSync(file).ino;
  await writeMachineId(file, "00ff1e3fabcdef0123456789fedcba98");
  assert.equal(readFileSync(file, "utf8"), "00ff1e3fabcdef0123456789fedcba98");
  assert.equal(statSync(file).ino, inode);
  assert.equal(statSync(file).mode & 0o777, 0o444);
  const mtime = statSync(file).mtimeMs;
  await writeMachineId(file, "00ff1e3fabcdef0123456789fedcba98");
  assert.equal(statSync(file).mtimeMs, mtime);
});
