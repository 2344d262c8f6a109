import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { SeccompProfileController } from "../../../../agent/src/controllers/cri/seccomp-profile.js";
import { SeccompProfileFileController } from "../../../../agent/src/controllers/cri/seccomp-profile-file.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  CRI_NAMESPACE,
  SeccompProfileType,
  seccompProfileDefinition,
} from "../../../../agent/src/resources/catalog/cri.js";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../../../agent/src/resources/catalog/runtime.js";
import { marshalGoJson } from "../../../../agent/src/resources/go-json.js";
import { yamlSpec } from "../../../../agent/src/resources/definitions.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

const audit = "    - name: audit.json\n      value:\n        defaultAction: SCMP_ACT_LOG\n";
const deny = [
  "    - name: deny.json",
  "      value:",
  "        defaultAction: SCMP_ACT_ERRNO",
  "        syscalls:",
  "          - names: [mount, '<x>&']",
  "            action: SCMP_ACT_ALLOW",
  "            errnoRet: 1",
  "        architectures: [SCMP_ARCH_X86_64]",
  "",
].join("\n");

// What Go's json.Marshal writes for these values (checked with Go 1.26's encoding/json).
const auditJson = '{"defaultAction":"SCMP_ACT_LOG"}';
const denyJson =
  '{"architectures":["SCMP_ARCH_X86_64"],"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"action":"SCMP_ACT_ALLOW","errnoRet":1,"names":["mount","\\u003cx\\u003e\\u0026"]}]}';

function configWith(profiles: string): ConfigBundle {
  return loadConfig(Buffer.from(`version: v1alpha1\nmachine:\n  type: worker\n  seccompProfiles:\n${profiles}`));
}

async function nodeWith(t: TestContext, profiles: string, opts: { container: boolean }) {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const active = new Observed<ConfigBundle | undefined>(configWith(profiles));
  const varDir = await fs.mkdtemp(path.join(os.tmpdir(), "seccomp-"));
  const directory = path.join(varDir, "lib", "kubelet", "seccomp", "profiles");
  for (const c of [
    new MachineConfigController(active),
    new SeccompProfileController(),
    new SeccompProfileFileController({ directory, container: opts.container }),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(async () => {
    ac.abort();
    await fs.rm(varDir, { recursive: true, force: true });
  });
  runtime.start(ac.signal);
  await runtime.whenIdle();
  const mountEphemeral = () =>
    state.modify(
      RUNTIME_NAMESPACE,
      MountStatusType,
      "EPHEMERAL",
      "runtime.MountStatusController",
      () => ({ source: "/dev/vda6", target: "/var", filesystemType: "xfs", encrypted: false }) as never,
    );
  const files = async () => (await fs.readdir(directory)).sort();
  return { state, runtime, active, directory, mountEphemeral, files };
}

test("each profile of the config is a SeccompProfile; a profile dropped from the config is destroyed", async (t) => {
  const { state, runtime, active } = await nodeWith(t, audit + deny, { container: true });
  const ids = () => state.list(CRI_NAMESPACE, SeccompProfileType).map((r) => r.metadata.id);
  assert.deepEqual(ids(), ["audit.json", "deny.json"]);
  const res = state.get(CRI_NAMESPACE, SeccompProfileType, "deny.json");
  assert.equal(res?.metadata.owner, "cri.SeccompProfileController");
  assert.deepEqual(res?.spec, {
    name: "deny.json",
    value: {
      defaultAction: "SCMP_ACT_ERRNO",
      syscalls: [{ names: ["mount", "<x>&"], action: "SCMP_ACT_ALLOW", errnoRet: 1 }],
      architectures: ["SCMP_ARCH_X86_64"],
    },
  });
  // yaml.v3 writes a Go map's keys sorted.
  assert.equal(
    yamlSpec(seccompProfileDefinition, res!.spec as never),
    [
      "name: deny.json",
      "value:",
      "    architectures:",
      "        - SCMP_ARCH_X86_64",
      "    defaultAction: SCMP_ACT_ERRNO",
      "    syscalls:",
      "        - action: SCMP_ACT_ALLOW",
      "          errnoRet: 1",
      "          names:",
      "              - mount",
      "              - <x>&",
      "",
    ].join("\n"),
  );

  active.set(configWith(audit));
  await runtime.whenIdle();
  assert.deepEqual(ids(), ["audit.json"]);
});

test("the profiles are written as Go's JSON once /var is mounted; files of other names are removed", async (t) => {
  const { runtime, active, directory, mountEphemeral, files } = await nodeWith(t, audit + deny, {
    container: false,
  });
  await assert.rejects(fs.stat(directory), { code: "ENOENT" }, "nothing is written before EPHEMERAL is mounted");

  mountEphemeral();
  await runtime.whenIdle();
  assert.equal((await fs.stat(directory)).mode & 0o777, 0o700);
  assert.deepEqual(await files(), ["audit.json", "deny.json"]);
  assert.equal(await fs.readFile(path.join(directory, "audit.json"), "utf8"), auditJson);
  assert.equal(await fs.readFile(path.join(directory, "deny.json"), "utf8"), denyJson);
  assert.equal((await fs.stat(path.join(directory, "deny.json"))).mode & 0o777, 0o644);

  await fs.mkdir(path.join(directory, "stray"));
  await fs.writeFile(path.join(directory, "stray.json"), "{}");
  const auditBefore = await fs.stat(path.join(directory, "audit.json"));
  active.set(configWith(audit));
  await runtime.whenIdle();
  assert.deepEqual(await files(), ["audit.json"]);
  const auditAfter = await fs.stat(path.join(directory, "audit.json"));
  assert.equal(auditAfter.mtimeMs, auditBefore.mtimeMs, "an unchanged profile is not rewritten");
});

test("a changed profile's file is rewritten; a name that leaves the directory is not written", async (t) => {
  const outside = "    - name: ../escape.json\n      value:\n        defaultAction: SCMP_ACT_LOG\n";
  const { runtime, active, directory, files } = await nodeWith(t, audit + outside, { container: true });
  assert.deepEqual(await files(), ["audit.json"]);
  await assert.rejects(fs.stat(path.join(directory, "..", "escape.json")), { code: "ENOENT" });

  active.set(configWith("    - name: audit.json\n      value:\n        defaultAction: SCMP_ACT_KILL\n"));
  await runtime.whenIdle();
  assert.equal(await fs.readFile(path.join(directory, "audit.json"), "utf8"), '{"defaultAction":"SCMP_ACT_KILL"}');
});

test("Go's JSON: sorted keys, HTML and line separators escaped, short escapes for \\b and \\f", () => {
  assert.equal(
    marshalGoJson({
      defaultAction: "SCMP_ACT_ERRNO",
      syscalls: [{ names: ["mount", "<x>&\u2028\b\f\u0001"], action: "SCMP_ACT_ALLOW", errnoRet: 1 }],
      architectures: ["SCMP_ARCH_X86_64"],
      f: 0.5,
      big: 1e21,
      small: 1e-7,
      n: null,
      t: true,
    }),
    // Go 1.26's json.Marshal of the same map[string]interface{}.
    '{"architectures":["SCMP_ARCH_X86_64"],"big":1e+21,"defaultAction":"SCMP_ACT_ERRNO","f":0.5,"n":null,"small":1e-7,"syscalls":[{"action":"SCMP_ACT_ALLOW","errnoRet":1,"names":["mount","\\u003cx\\u003e\\u0026\\u2028\\b\\f\\u0001"]}],"t":true}',
  );
});
