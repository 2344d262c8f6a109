// The CRI containerd's configuration files: hosts directories as Talos's GenerateHosts lays them
// out (expected texts from Talos's hosts_test.go cases), cri.toml and the main file, and the
// registry controller writing them from the active config into a directory.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse as parseTomlTables } from "smol-toml";
import type { ConfigBundle } from "../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../agent/src/config/load.js";
import { Observed } from "../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../agent/src/controllers/config/machine-config.js";
import { CriRegistryConfigController } from "../../../agent/src/controllers/cri/registry-config.js";
import { criRuntime } from "../../../agent/src/machined/cri.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { criContainerdConfig, criPaths, criPluginConfig } from "../../../agent/src/services/cri/config.js";
import { generateHosts, hostDirectory, syncHosts } from "../../../agent/src/services/cri/hosts.js";
import type { Registries } from "../../../agent/src/services/images/registry.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";

// smol-toml builds tables without a prototype; compared as plain objects.
const parseToml = (text: string): unknown => JSON.parse(JSON.stringify(parseTomlTables(text)));

const b64 = (s: string) => Buffer.from(s).toString("base64");
const base = "/etc/cri/conf.d/hosts";
const text = (layout: ReturnType<typeof generateHosts>) =>
  Object.fromEntries(
    [...layout].map(([dir, files]) => [dir, files.map((f) => [f.name, f.contents.toString(), f.mode.toString(8)])]),
  );

test("mirrors with TLS settings: Talos's layout and hosts.toml texts (TestGenerateHostsWithTLS)", () => {
  const registries: Registries = {
    mirrors: { "docker.io": { endpoints: ["https://registry-1.docker.io", "https://registry-2.docker.io"] } },
    config: {
      "some.host:123": {
        auth: { username: "root", password: "secret", auth: "auth", identityToken: "token" },
        tls: {
          insecureSkipVerify: true,
          ca: b64("cacert"),
          clientIdentity: { crt: b64("clientcert"), key: b64("clientkey") },
        },
      },
      "registry-2.docker.io": { tls: { insecureSkipVerify: true } },
    },
  };
  assert.deepEqual(text(generateHosts(registries, base)), {
    "docker.io": [
      [
        "hosts.toml",
        '\n[host]\n\n  [host."https://registry-1.docker.io"]\n    capabilities = ["pull", "resolve"]\n\n  [host."https://registry-2.docker.io"]\n    capabilities = ["pull", "resolve"]\n    skip_verify = true\n',
        "600",
      ],
    ],
    "some.host_123_": [
      ["some.host:123-ca.crt", "cacert", "600"],
      ["some.host:123-client.crt", "clientcert", "600"],
      ["some.host:123-client.key", "clientkey", "600"],
      [
        "hosts.toml",
        '\n[host]\n\n  [host."https://some.host:123"]\n    ca = "/etc/cri/conf.d/hosts/some.host_123_/some.host:123-ca.crt"\n    client = [["/etc/cri/conf.d/hosts/some.host_123_/some.host:123-client.crt", "/etc/cri/conf.d/hosts/some.host_123_/some.host:123-client.key"]]\n    skip_verify = true\n',
        "600",
      ],
    ],
    "registry-2.docker.io": [
      ["hosts.toml", '\n[host]\n\n  [host."https://registry-2.docker.io"]\n    skip_verify = true\n', "600"],
    ],
  });
});

test("mirrors without TLS, the * mirror as _default, an auth-only registry; a wildcard TLS config is refused (TestGenerateHostsWithoutTLS, ...WildcardWrong)", () => {
  const registries: Registries = {
    mirrors: {
      "docker.io": { endpoints: ["https://registry-1.docker.io", "https://registry-2.docker.io"] },
      "*": { endpoints: ["https://my-registry"] },
    },
    config: {
      "some.host:123": { auth: { username: "root", password: "secret", auth: "auth", identityToken: "token" } },
    },
  };
  assert.deepEqual(text(generateHosts(registries, base)), {
    "docker.io": [
      [
        "hosts.toml",
        '\n[host]\n\n  [host."https://registry-1.docker.io"]\n    capabilities = ["pull", "resolve"]\n\n  [host."https://registry-2.docker.io"]\n    capabilities = ["pull", "resolve"]\n',
        "600",
      ],
    ],
    _default: [
      ["hosts.toml", '\n[host]\n\n  [host."https://my-registry"]\n    capabilities = ["pull", "resolve"]\n', "600"],
    ],
    "some.host_123_": [["hosts.toml", '\n[host]\n\n  [host."https://some.host:123"]\n', "600"]],
  });
  assert.throws(
    () => generateHosts({ config: { "*": { tls: { ca: b64("allcert") } } } }, base),
    /^InvalidInputError: wildcard host TLS configuration is not supported$|wildcard host TLS configuration is not supported/,
  );
  assert.equal(hostDirectory("127.0.0.1:5000"), "127.0.0.1_5000_");
  assert.equal(generateHosts(undefined, base).size, 0);
});

test("an overridePath mirror says so in its hosts.toml", () => {
  const layout = generateHosts(
    { mirrors: { "ghcr.io": { endpoints: ["http://127.0.0.1:5000/v2/ghcr"], overridePath: true } } },
    base,
  );
  assert.equal(
    layout.get("ghcr.io")![0]!.contents.toString(),
    '\n[host]\n\n  [host."http://127.0.0.1:5000/v2/ghcr"]\n    capabilities = ["pull", "resolve"]\n    override_path = true\n',
  );
});

test("cri.toml: runc v2, Talos's effective sandbox image, config_path and each registry's auth (Talos's testdata/cri.toml keys)", () => {
  const p = criPaths(pathsAt("/"));
  assert.equal(p.hosts, "/system/etc/cri/conf.d/hosts");
  assert.equal(
    criPluginConfig(
      {
        config: {
          "some.host:123": { auth: { username: "root", password: "secret", auth: "auth", identityToken: "token" } },
          "other:1": { tls: { insecureSkipVerify: true } },
        },
      },
      p,
    ),
    [
      "version = 2",
      "",
      '[plugins."io.containerd.grpc.v1.cri"]',
      '  sandbox_image = "registry.k8s.io/pause:3.8"',
      "",
      '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
      '  runtime_type = "io.containerd.runc.v2"',
      "  discard_unpacked_layers = true",
      "",
      '[plugins."io.containerd.grpc.v1.cri".registry]',
      '  config_path = "/system/etc/cri/conf.d/hosts"',
      "",
      '[plugins."io.containerd.grpc.v1.cri".registry.configs."some.host:123".auth]',
      '  username = "root"',
      '  password = "secret"',
      '  auth = "auth"',
      '  identitytoken = "token"',
      "",
    ].join("\n"),
  );
});

test("the main file: the CRI containerd's paths (no clash with the system containerd's), cri.toml then the operator's parts", () => {
  const p = criPaths(pathsAt("/"));
  assert.deepEqual(
    [p.socket, p.state, p.root, p.config],
    ["/run/containerd/containerd.sock", "/run/containerd", "/var/lib/containerd", "/system/etc/cri/containerd.toml"],
  );
  const main = criContainerdConfig(p, [
    "/system/etc/cri/conf.d/zz.toml",
    "/system/etc/cri/conf.d/cri.toml",
    "/system/etc/cri/conf.d/20-x.toml",
  ]);
  assert.match(
    main,
    /^imports = \["\/system\/etc\/cri\/conf.d\/cri.toml", "\/system\/etc\/cri\/conf.d\/20-x.toml", "\/system\/etc\/cri\/conf.d\/zz.toml"\]$/m,
  );
  assert.match(main, /^\[grpc\]\n {2}address = "\/run\/containerd\/containerd.sock"$/m);
  assert.match(
    main,
    /^disabled_plugins = \["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp"\]$/m,
  );
});

test("syncHosts writes the layout and removes files and directories it does not name; unchanged files are not rewritten", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-hosts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, "stale.io"));
  writeFileSync(path.join(dir, "stale.io", "hosts.toml"), "x");
  const layout = generateHosts(
    { mirrors: { "docker.io": { endpoints: ["https://m"] } }, config: { m: { tls: { ca: b64("ca") } } } },
    dir,
  );
  await syncHosts(dir, layout);
  // `m` has TLS settings of its own: its directory too, as Talos's.
  assert.deepEqual(readdirSync(dir).sort(), ["docker.io", "m"]);
  assert.deepEqual(readdirSync(path.join(dir, "docker.io")).sort(), ["hosts.toml", "m-ca.crt"]);
  writeFileSync(path.join(dir, "docker.io", "extra"), "y");
  const before = statSync(path.join(dir, "docker.io", "hosts.toml")).mtimeMs;
  await new Promise((r) => setTimeout(r, 20));
  await syncHosts(dir, layout);
  assert.deepEqual(readdirSync(path.join(dir, "docker.io")).sort(), ["hosts.toml", "m-ca.crt"]);
  assert.equal(statSync(path.join(dir, "docker.io", "hosts.toml")).mtimeMs, before);
});

function config(registries: string): ConfigBundle {
  return loadConfig(
    Buffer.from(
      `version: v1alpha1\nmachine:\n  type: worker\n${registries}cluster:\n  controlPlane:\n    endpoint: https://127.0.0.1:6443\n`,
    ),
  );
}

test("the registry controller writes cri.toml and the hosts directories from the active config, and follows its changes", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-cri-ctrl-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const p = criPaths(pathsAt(dir));
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const active = new Observed<ConfigBundle | undefined>(
    config(
      '  registries:\n    mirrors:\n      registry.k8s.io:\n        endpoints: ["https://127.0.0.1:5000"]\n    config:\n      127.0.0.1:5000:\n        auth: {username: u, password: p}\n',
    ),
  );
  runtime.register(new MachineConfigController(active));
  runtime.register(new CriRegistryConfigController(p));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();
  assert.equal(
    readFileSync(path.join(p.hosts, "registry.k8s.io", "hosts.toml"), "utf8"),
    '\n[host]\n\n  [host."https://127.0.0.1:5000"]\n    capabilities = ["pull", "resolve"]\n',
  );
  const cri = (
    parseToml(readFileSync(p.criPart, "utf8")) as {
      plugins: Record<string, { registry: { configs: Record<string, unknown> } }>;
    }
  ).plugins["io.containerd.grpc.v1.cri"]!;
  assert.deepEqual(cri.registry.configs["127.0.0.1:5000"], {
    auth: { username: "u", password: "p", auth: "", identitytoken: "" },
  });
  assert.equal(statSync(p.criPart).mode & 0o777, 0o600);

  active.set(config('  registries:\n    mirrors:\n      docker.io:\n        endpoints: ["https://mirror.example"]\n'));
  await runtime.whenIdle();
  assert.deepEqual(readdirSync(p.hosts), ["docker.io"]);
  assert.doesNotMatch(readFileSync(p.criPart, "utf8"), /auth/);
});

test("the cri service runs only where the config has a cluster, after containerd, in Talos's cgroup", () => {
  const runtime = criRuntime(pathsAt("/nonexistent"), new ResourceState(), { command: "/usr/bin/containerd" });
  try {
    const worker = config("");
    assert.deepEqual(runtime.services(undefined), []);
    assert.deepEqual(runtime.services(loadConfig(Buffer.from("version: v1alpha1\nmachine:\n  type: worker\n"))), []);
    const [cri] = runtime.services(worker);
    assert.deepEqual(
      [cri?.id, cri?.dependsOn, cri?.cgroup, cri?.oomScoreAdj, cri?.restart],
      ["cri", ["containerd"], "/podruntime/runtime", -500, "always"],
    );
  } finally {
    runtime.close();
  }
});
