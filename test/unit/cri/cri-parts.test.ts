// The CRI configuration parts merged as Talos's CRIConfigPartsController merges conf.d/*.part
// (internal/pkg/toml Merge over config/merge's rules), and the registry controller merging the
// config's /etc/cri/conf.d/20-customization.part and any other part into conf.d/cri.toml.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse as parseTomlTables } from "smol-toml";
import type { ConfigBundle } from "../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../agent/src/config/load.js";
import { Observed } from "../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../agent/src/controllers/config/machine-config.js";
import { CriRegistryConfigController } from "../../../agent/src/controllers/cri/registry-config.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { criPaths } from "../../../agent/src/services/cri/config.js";
import { mergeTomlParts, TomlMergeError } from "../../../agent/src/services/cri/toml-merge.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";

// smol-toml builds tables without a prototype; compared as plain objects.
const parseToml = (text: string): unknown => JSON.parse(JSON.stringify(parseTomlTables(text)));

const merged = (base: string, ...texts: string[]) =>
  mergeTomlParts(
    base,
    texts.map((text, i) => ({ name: `/etc/cri/conf.d/${i + 1}.part`, text })),
  );

test("tables merge key by key; a later part's value replaces an earlier one's", () => {
  const out = merged('[a]\nx = "base"\nkeep = 1\n[a.b]\ny = true\n', '[a]\nx = "part"\n[a.c]\nz = 2\n');
  assert.deepEqual(parseToml(out), { a: { x: "part", keep: 1, b: { y: true }, c: { z: 2 } } });
});

test("arrays are appended; an empty string, a zero or an empty array leaves the earlier value; false replaces", () => {
  const out = merged(
    'list = ["a"]\ns = "kept"\nn = 5\nflag = true\nempty = ["b"]\n',
    'list = ["c"]\ns = ""\nn = 0\nflag = false\nempty = []\n',
  );
  assert.deepEqual(parseToml(out), { list: ["a", "c"], s: "kept", n: 5, flag: false, empty: ["b"] });
});

test("the merged file names each part in a ## line, in order, before the TOML", () => {
  const out = merged("version = 2\n", "[x]\ny = 1\n", "[x]\nz = 2\n");
  assert.equal(out.split("\n\n")[0], "## /etc/cri/conf.d/1.part\n## /etc/cri/conf.d/2.part");
  assert.deepEqual(parseToml(out), { version: 2, x: { y: 1, z: 2 } });
});

test("a key that changes kind, or a part that is not TOML, is a TomlMergeError naming the part", () => {
  assert.throws(
    () => merged("[a]\nx = 1\n", '[a]\nx = "one"\n'),
    (err: unknown) =>
      err instanceof TomlMergeError &&
      err.message === 'error merging "/etc/cri/conf.d/1.part": merge type mismatch at a.x: number and string',
  );
  assert.throws(
    () => merged("", "[a\n"),
    (err: unknown) =>
      err instanceof TomlMergeError && err.message.startsWith('error decoding "/etc/cri/conf.d/1.part": '),
  );
});

function config(files: string): ConfigBundle {
  return loadConfig(
    Buffer.from(
      `version: v1alpha1\nmachine:\n  type: worker\n${files}cluster:\n  controlPlane:\n    endpoint: https://127.0.0.1:6443\n`,
    ),
  );
}
const customization = (toml: string) =>
  `  files:\n    - op: create\n      path: /etc/cri/conf.d/20-customization.part\n      content: |\n${toml
    .split("\n")
    .filter(Boolean)
    .map((l) => `        ${l}`)
    .join("\n")}\n`;

test("the controller merges the config's 20-customization.part and other conf.d parts into cri.toml, and drops the customization with the config's", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-cri-parts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const p = criPaths(pathsAt(dir));
  mkdirSync(p.confd, { recursive: true });
  // A part an extension ships: merged after the customization (name order).
  writeFileSync(
    path.join(p.confd, "30-extension.part"),
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gvisor]\nruntime_type = "io.containerd.runsc.v1"\n',
  );
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const active = new Observed<ConfigBundle | undefined>(
    config(
      customization(
        '[plugins."io.containerd.grpc.v1.cri"]\nenable_unprivileged_ports = true\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\ndiscard_unpacked_layers = false\n',
      ),
    ),
  );
  runtime.register(new MachineConfigController(active));
  runtime.register(new CriRegistryConfigController(p));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();

  const part = path.join(p.confd, "20-customization.part");
  assert.equal(statSync(part).mode & 0o777, 0o600);
  const text = readFileSync(p.criPart, "utf8");
  assert.equal(text.split("\n\n")[0], `## ${part}\n## ${path.join(p.confd, "30-extension.part")}`);
  type Cri = {
    sandbox_image: string;
    enable_unprivileged_ports?: boolean;
    containerd: { runtimes: Record<string, Record<string, unknown>> };
  };
  const cri = (t: string) => (parseToml(t) as { plugins: Record<string, Cri> }).plugins["io.containerd.grpc.v1.cri"]!;
  assert.equal(cri(text).enable_unprivileged_ports, true);
  assert.equal(cri(text).sandbox_image, "registry.k8s.io/pause:3.8");
  assert.deepEqual(cri(text).containerd.runtimes, {
    runc: { runtime_type: "io.containerd.runc.v2", discard_unpacked_layers: false },
    gvisor: { runtime_type: "io.containerd.runsc.v1" },
  });

  active.set(config(""));
  await runtime.whenIdle();
  assert.equal(existsSync(part), false);
  const after = readFileSync(p.criPart, "utf8");
  assert.equal(cri(after).enable_unprivileged_ports, undefined);
  assert.equal(cri(after).containerd.runtimes.runc!.discard_unpacked_layers, true);
});
