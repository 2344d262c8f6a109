import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigParseError } from "../../../agent/src/errors.js";
import { formatProblems, loadConfig, multiError, parseProblems } from "../../../agent/src/config/index.js";
import { fixture, otherKindFixtures, stabilityConfigs, yamlDocs } from "./fixtures.js";

function problemsOf(text: string): string[] {
  try {
    loadConfig(text);
  } catch (err) {
    assert.ok(err instanceof ConfigParseError, `expected ConfigParseError, got ${String(err)}`);
    return parseProblems(err);
  }
  assert.fail("loadConfig accepted an invalid config");
}

for (const { name, text } of stabilityConfigs) {
  test(`stability ${name}: loads, keeps keys intact, round-trips byte for byte`, () => {
    const bundle = loadConfig(text);
    assert.equal(bundle.documents.length, 1);
    assert.equal(bundle.completeForBoot, true);
    assert.equal(bundle.machineType, name.endsWith("controlplane") ? "controlplane" : "worker");
    assert.deepEqual(bundle.warnings, []);
    assert.equal(bundle.toYaml(), text);
    assert.equal(loadConfig(Buffer.from(text)).toYaml(), text);
    const cfg = bundle.v1alpha1()!;
    assert.equal(cfg.cluster?.controlPlane?.endpoint, "https://base:6443");
    const machineKey = Buffer.from(cfg.machine!.ca!.crt!, "base64").toString();
    assert.match(machineKey, /^-----BEGIN CERTIFICATE-----/);
    if (name.endsWith("controlplane")) {
      assert.match(Buffer.from(cfg.machine!.ca!.key!, "base64").toString(), /BEGIN ED25519 PRIVATE KEY/);
      assert.match(Buffer.from(cfg.cluster!.ca!.key!, "base64").toString(), /BEGIN EC PRIVATE KEY/);
      assert.ok(cfg.cluster!.serviceAccount!.key!.length > 0);
    } else {
      assert.equal(cfg.machine!.ca!.key, "");
    }
    // The canonical re-encoding is what talosctl writes: identical bytes.
    assert.equal(bundle.toCanonicalYaml(), text);
  });
}

test("overrides: deeper keys are typed", () => {
  const cfg = loadConfig(stabilityConfigs[2].text).v1alpha1()!;
  assert.equal(cfg.machine?.install?.disk, "/dev/vda");
  assert.deepEqual(cfg.machine?.install?.extraKernelArgs, ["foo=bar", "bar=baz"]);
  assert.equal(cfg.machine?.kubelet?.extraMounts?.[0].destination, "/var/opt");
  assert.deepEqual(cfg.machine?.registries?.mirrors?.["ghcr.io"].endpoints, ["https://ghcr.io.my-mirror.com"]);
  assert.equal(cfg.cluster?.network?.cni?.name, "custom");
  assert.equal(cfg.cluster?.controlPlane?.localAPIServerPort, 5443);
  assert.equal(cfg.cluster?.allowSchedulingOnControlPlanes, true);
});

test("decoder fixtures load", () => {
  for (const f of ["controlplane", "worker"]) {
    const b = loadConfig(fixture(`configloader/internal/decoder/${f}.yaml`));
    assert.equal(b.completeForBoot, true);
  }
});

for (const [file, kind] of otherKindFixtures) {
  test(`other document kind ${kind} loads by apiVersion+kind`, () => {
    const text = fixture(file);
    const bundle = loadConfig(text);
    assert.equal(bundle.documents.length, 1);
    assert.equal(bundle.documents[0].kind, kind);
    assert.equal(bundle.completeForBoot, false);
    assert.equal(bundle.machineType, undefined);
    assert.equal(bundle.v1alpha1(), undefined);
    assert.deepEqual(yamlDocs(bundle.toCanonicalYaml()), yamlDocs(text));
  });
}

test("typed views of other documents", () => {
  const rule = loadConfig(fixture("types/network/ruleconfig.yaml")).byKind<
    import("../../../agent/src/config/index.js").NetworkRuleConfig
  >("NetworkRuleConfig")[0];
  assert.deepEqual(rule.portSelector.ports, [53, "8000-9000"]);
  assert.equal(rule.ingress[0].except, "192.168.0.3/32");
  const link = loadConfig(fixture("types/siderolink/document.yaml")).byKind("SideroLinkConfig", undefined);
  assert.equal(link.length, 1);
});

test("multi-document config: v1alpha1 plus SideroLinkConfig", () => {
  const text = fixture("configpatcher/multidoc/config.yaml");
  const b = loadConfig(text);
  assert.deepEqual(
    b.documents.map((d) => d.kind),
    ["v1alpha1", "SideroLinkConfig"],
  );
  assert.equal(b.completeForBoot, true);
  assert.equal(b.toYaml(), text);
});

test("v1alpha1 detection: version without kind, or machine/cluster/debug/persist keys", () => {
  assert.equal(loadConfig("version: v1alpha1\n").completeForBoot, true);
  assert.equal(loadConfig("persist: true\n").completeForBoot, true);
  assert.equal(loadConfig("debug: false\n").completeForBoot, true);
  assert.equal(loadConfig("cluster:\n  clusterName: x\n").completeForBoot, true);
});

test("machine type: join and empty read as worker with a warning", () => {
  const join = loadConfig("version: v1alpha1\nmachine:\n  type: join\n");
  assert.equal(join.machineType, "worker");
  assert.equal(join.warnings.length, 1);
  assert.equal(join.warnings[0], '.machine.type: use "worker" instead of "join" for machine type');
  const empty = loadConfig('version: v1alpha1\nmachine:\n  type: ""\n');
  assert.equal(empty.machineType, "worker");
  assert.equal(empty.warnings.length, 1);
  assert.equal(loadConfig("version: v1alpha1\nmachine:\n  type: init\n").machineType, "init");
});

test("bad machine type fails to parse", () => {
  assert.deepEqual(problemsOf("version: v1alpha1\nmachine:\n  type: master\n"), [
    '.machine.type: unknown machine type "master"',
  ]);
});

test("YAML syntax errors carry line and column", () => {
  const problems = problemsOf("version: v1alpha1\nmachine:\n  type: worker\n  certSANs: [a, b\n");
  assert.equal(problems.length, 1);
  assert.match(problems[0], /^yaml: line \d+, column \d+: /);
});

test("unknown keys are rejected with their paths and lines", () => {
  const problems = problemsOf(
    "version: v1alpha1\nmachine:\n  type: worker\n  foo: 1\n  install:\n    disk: /dev/sda\n    bogus: true\nextra: 2\n",
  );
  assert.deepEqual(problems, [
    "unknown keys found during decoding: .machine.foo (line 4), .machine.install.bogus (line 7), .extra (line 8)",
  ]);
});

test("unknown keys in other documents are prefixed with the kind", () => {
  const problems = problemsOf("apiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://x\nfoo: bar\n");
  assert.deepEqual(problems, ["SideroLinkConfig: unknown keys found during decoding: .foo (line 4)"]);
});

test("unknown kind is rejected by name, missing kind is reported", () => {
  assert.deepEqual(problemsOf("apiVersion: v1alpha1\nkind: FancyConfig\nname: x\n"), [
    'document 1: unknown document kind "FancyConfig" (apiVersion "v1alpha1")',
  ]);
  assert.deepEqual(problemsOf("apiVersion: v1alpha1\nname: x\n"), ["document 1: missing kind"]);
});

test("wrong value kinds are reported with paths", () => {
  assert.deepEqual(problemsOf("version: v1alpha1\nmachine:\n  install:\n    wipe: maybe\n  certSANs: foo\n"), [
    '.machine.install.wipe: cannot unmarshal !!str "maybe" into bool (line 4)',
    '.machine.certSANs: cannot unmarshal !!str "foo" into list (line 5)',
  ]);
});

test("all problems of all documents are reported at once", () => {
  const text = [
    "version: v1alpha1\nmachine:\n  type: boss\n  nope: 1\n",
    "apiVersion: v1alpha1\nkind: Unknown\n",
    "apiVersion: v1alpha1\nname: missing-kind\n",
    "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: [1]\n",
  ].join("---\n");
  let message = "";
  try {
    loadConfig(text);
  } catch (err) {
    message = (err as Error).message;
    assert.equal(parseProblems(err as ConfigParseError).length, 5);
  }
  assert.match(message, /^5 errors occurred:\n\t\* /);
  assert.match(message, /unknown keys found during decoding: \.machine\.nope/);
  assert.match(message, /unknown machine type "boss"/);
  assert.match(message, /unknown document kind "Unknown"/);
  assert.match(message, /document 3: missing kind/);
  assert.match(message, /WatchdogTimerConfig: \.timeout: cannot unmarshal !!seq into string/);
});

test("duplicate documents are rejected", () => {
  const doc = "apiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://a\n";
  assert.deepEqual(problemsOf(doc + "---\n" + doc), ["duplicate SideroLinkConfig document"]);
  const rule = (n: string) =>
    `apiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: ${n}\nportSelector:\n  ports: [22]\n  protocol: tcp\ningress: []\n`;
  assert.equal(loadConfig(rule("a") + "---\n" + rule("b")).documents.length, 2);
  assert.deepEqual(problemsOf(rule("a") + "---\n" + rule("a")), ['duplicate NetworkRuleConfig document named "a"']);
});

test("empty config is an error, empty trailing documents are ignored", () => {
  assert.deepEqual(problemsOf(""), ["config is empty: no documents found"]);
  assert.equal(loadConfig("version: v1alpha1\n---\n").documents.length, 1);
});

test("yes/no booleans and octal file permissions decode like go-yaml", () => {
  const cfg = loadConfig(
    "version: v1alpha1\ndebug: yes\nmachine:\n  files:\n    - content: x\n      permissions: 0644\n      path: /var/x\n      op: create\n",
  ).v1alpha1()!;
  assert.equal(cfg.debug, true);
  assert.equal(cfg.machine?.files?.[0].permissions, 0o644);
});

test("inline manifest contents lose leading blank lines in the typed view, not in the stored text", () => {
  const text =
    "version: v1alpha1\ncluster:\n  inlineManifests:\n    - name: a\n      contents: |\n\n        ---\n        kind: X\n";
  const b = loadConfig(text);
  assert.equal(b.v1alpha1()?.cluster?.inlineManifests?.[0].contents, "---\nkind: X\n");
  assert.equal(b.toYaml(), text);
});

test("YAML anchors, aliases and << merge keys resolve like go-yaml", () => {
  const text = `version: v1alpha1
machine:
  type: worker
  certSANs: &sans [a, b]
  kubelet:
    extraArgs: &args
      foo: "1"
  network:
    interfaces:
      - &eth
        interface: eth0
        mtu: 1500
      - <<: *eth
        interface: eth1
cluster:
  apiServer:
    certSANs: *sans
    extraArgs:
      <<: *args
      bar: "2"
`;
  const cfg = loadConfig(text).v1alpha1()!;
  assert.deepEqual(cfg.cluster?.apiServer?.certSANs, ["a", "b"]);
  assert.deepEqual(cfg.cluster?.apiServer?.extraArgs, { bar: "2", foo: "1" });
  assert.deepEqual(cfg.machine?.network?.interfaces?.[1], { interface: "eth1", mtu: 1500 });
});

test("gzip-compressed config bytes are detected", async () => {
  const { gzipSync } = await import("node:zlib");
  const text = stabilityConfigs[0].text;
  const b = loadConfig(gzipSync(Buffer.from(text)));
  assert.equal(b.machineType, "controlplane");
  assert.equal(b.toYaml(), text);
});

test("quoted booleans are strings, not bools", () => {
  assert.deepEqual(problemsOf('version: v1alpha1\ndebug: "yes"\n'), [
    '.debug: cannot unmarshal !!str "yes" into bool (line 2)',
  ]);
});

test("canonical encoding: tricky strings survive a round trip", () => {
  const values = [
    "",
    "true",
    "1.0",
    "null",
    "0644",
    "- x",
    "a: b",
    "#c",
    " lead",
    "trail ",
    "multi\nline\n",
    "no newline\nend",
    "two\n\n",
    "\nleading",
    "tab\tin",
    'quote"s',
    "colon:x",
    "~",
    "@x",
    "*x",
    "&x",
    "!x",
    "%x",
    "{x}",
    "[x]",
    "é ü",
  ];
  const text =
    "version: v1alpha1\nmachine:\n  sysctls:\n" + values.map((v, i) => `    k${i}: ${JSON.stringify(v)}\n`).join("");
  const b = loadConfig(text);
  const again = loadConfig(b.toCanonicalYaml()).v1alpha1()!;
  assert.deepEqual(again.machine?.sysctls, b.v1alpha1()!.machine?.sysctls);
  assert.equal(Object.keys(again.machine?.sysctls ?? {}).length, values.length);
  const list = loadConfig("version: v1alpha1\nmachine:\n  certSANs: " + JSON.stringify(values) + "\n");
  assert.deepEqual(loadConfig(list.toCanonicalYaml()).v1alpha1()?.machine?.certSANs, values);
});

test("gzip-compressed configs load; a broken gzip stream is a parse error naming the cause", async () => {
  const { gzipSync } = await import("node:zlib");
  const text = "version: v1alpha1\nmachine:\n  type: worker\n";
  assert.equal(loadConfig(gzipSync(text)).v1alpha1()?.machine?.type, "worker");
  const truncated = gzipSync(text).subarray(0, 12);
  assert.throws(
    () => loadConfig(truncated),
    (err: unknown) =>
      err instanceof ConfigParseError && /gzip-compressed but does not decompress/.test((err as Error).message),
  );
});

test("multiError reads like go-multierror; a parse error's message is its single problem or that list without the closing blank line", () => {
  assert.equal(multiError(["a"]), "1 error occurred:\n\t* a\n\n");
  assert.equal(multiError(["a", "b"]), "2 errors occurred:\n\t* a\n\t* b\n\n");
  assert.equal(formatProblems(["a"]), "a");
  assert.equal(formatProblems(["a", "b"]), "2 errors occurred:\n\t* a\n\t* b");
});
