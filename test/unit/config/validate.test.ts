import assert from "node:assert/strict";
import { test } from "node:test";
import { applyDefaults, defaults, loadConfig, validateConfig } from "../../../agent/src/config/index.js";
import { fixture, otherKindFixtures, stabilityConfigs } from "./fixtures.js";

// The node's side of the install disk check (storage's, tested with it): here, only which paths exist.
const existing = (paths: string[]) => (install: { disk?: string }) =>
  paths.includes(install.disk ?? "")
    ? undefined
    : `specified install disk does not exist: ${JSON.stringify(install.disk)}`;

for (const { name, text } of stabilityConfigs) {
  test(`stability ${name}: validates in container mode and when installed on metal`, () => {
    const b = loadConfig(text);
    assert.deepEqual(validateConfig(b, { mode: "container" }), { errors: [], warnings: [] });
    assert.deepEqual(validateConfig(b, { mode: "metal", installed: true }), { errors: [], warnings: [] });
  });
}

test("stability overrides (install disk /dev/vda) validate on metal when the disk exists", () => {
  for (const { text } of stabilityConfigs.filter((c) => c.name.startsWith("overrides"))) {
    const b = loadConfig(text);
    assert.deepEqual(validateConfig(b, { mode: "metal", installDisk: existing(["/dev/vda"]) }).errors, []);
    assert.deepEqual(validateConfig(b, { mode: "metal", installDisk: existing(["/dev/sda"]) }).errors, [
      '.machine.install.disk: specified install disk does not exist: "/dev/vda"',
    ]);
  }
});

test("stability base configs have no install disk: metal mode asks for one", () => {
  for (const { text } of stabilityConfigs.filter((c) => c.name.startsWith("base"))) {
    assert.deepEqual(validateConfig(loadConfig(text), { mode: "metal", installDisk: existing(["/dev/sda"]) }).errors, [
      '.machine.install.disk: an install disk is required in "metal" mode',
    ]);
  }
});

test("other document fixtures validate", () => {
  for (const [file] of otherKindFixtures) {
    assert.deepEqual(validateConfig(loadConfig(fixture(file)), { mode: "metal" }).errors, [], file);
  }
});

const workerWithKeys = stabilityConfigs[1].text
  .replace(/(machine:\n(?:.*\n)*?\s+ca:\n\s+crt: .*\n\s+key: )""/, "$1c2VjcmV0")
  .replace(/(cluster:\n(?:.*\n)*?    ca:\n\s+crt: .*\n\s+key: )""/, "$1c2VjcmV0");

test("worker with CA keys and etcd config", () => {
  assert.notEqual(workerWithKeys, stabilityConfigs[1].text);
  const text = workerWithKeys + "    etcd:\n        image: x\n";
  const { errors } = validateConfig(loadConfig(text), { mode: "container" });
  assert.deepEqual(errors, [
    ".machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)",
    ".cluster.ca.key: issuing Kubernetes API CA key is not allowed on non-controlplane nodes (.cluster.ca)",
    ".cluster.etcd: etcd config is only allowed on control plane machines",
  ]);
});

test("missing machine, cluster, endpoint; persist false; metal without install", () => {
  const r1 = validateConfig(loadConfig("version: v1alpha1\npersist: false\n"), { mode: "metal" });
  assert.deepEqual(r1.errors, [
    ".persist: .persist should be enabled",
    ".machine: machine instructions are required",
    ".cluster: cluster instructions are required",
  ]);
  const r2 = validateConfig(
    loadConfig("version: v1alpha1\nmachine:\n  type: controlplane\ncluster:\n  clusterName: x\n"),
    { mode: "metal" },
  );
  assert.deepEqual(r2.errors, [
    '.machine.install: install instructions are required in "metal" mode',
    ".machine.ca: issuing CA or some accepted CAs are required (.machine.ca, machine.acceptedCAs)",
    ".cluster.controlPlane.endpoint: cluster controlplane endpoint is required",
  ]);
  const r3 = validateConfig(
    loadConfig(
      "version: v1alpha1\nmachine:\n  type: worker\n  ca:\n    crt: Y3J0\ncluster:\n  controlPlane:\n    endpoint: not a url\n",
    ),
    { mode: "cloud" },
  );
  assert.equal(r3.errors.length, 1);
  assert.match(r3.errors[0], /^\.cluster\.controlPlane\.endpoint: invalid controlplane endpoint: /);
});

test("network: cidr+addresses, VIP on worker, kubespan without discovery, bad values", () => {
  const text = `version: v1alpha1
machine:
  type: worker
  ca:
    crt: Y3J0
  network:
    kubespan:
      enabled: true
    nameservers: [1.1.1.1, not-an-ip]
    interfaces:
      - interface: eth0
        cidr: 10.0.0.2/24
        addresses: [10.0.0.3/24]
        vip:
          ip: 10.0.0.100
        routes:
          - network: 10.1.0.0/33
            gateway: 10.0.0.1
  time:
    bootTimeout: soon
  registries:
    mirrors:
      docker.io:
        endpoints: [mirror.local]
cluster:
  controlPlane:
    endpoint: https://cp:6443
  network:
    cni:
      name: weave
    podSubnets: [10.244.0.0/16]
`;
  const { errors, warnings } = validateConfig(loadConfig(text), { mode: "container" });
  assert.deepEqual(
    errors.sort(),
    [
      '.cluster.network.cni.name: cni name should be one of ["flannel", "custom", "none"]',
      ".cluster.discovery.enabled: .cluster.discovery should be enabled when .machine.network.kubespan is enabled",
      ".cluster.id: .cluster.id should be set when .machine.network.kubespan is enabled",
      ".cluster.secret: .cluster.secret should be set when .machine.network.kubespan is enabled",
      '.machine.network.interfaces[0].routes[0].network: invalid CIDR "10.1.0.0/33"',
      ".machine.network.interfaces[0].vip: virtual (shared) IP is not allowed on non-controlplane nodes",
      `.machine.network.interfaces[0]: [networking.os.device] "eth0": interface can't have both .cidr and .addresses set`,
      '.machine.network.nameservers[1]: invalid IP address "not-an-ip"',
      '.machine.registries.mirrors["docker.io"].endpoints[0]: invalid URL "mirror.local"',
      '.machine.time.bootTimeout: invalid duration "soon"',
    ].sort(),
  );
  assert.deepEqual(warnings, [
    '.machine.network.interfaces[0].cidr: "eth0": machine.network.interface.cidr is deprecated, please use machine.network.interface.addresses',
  ]);
});

test("network: bond option names and combinations as Talos checks them", () => {
  const text = `version: v1alpha1
machine:
  type: controlplane
  network:
    interfaces:
      - interface: bond0
        bond:
          interfaces: [eth0, eth1]
          mode: fastest
          lacpRate: fast
          updelay: 150
          miimon: 100
      - interface: bond1
        bond:
          mode: balance-rr
          primary: eth2
          downdelay: 200
cluster:
  controlPlane:
    endpoint: https://cp:6443
`;
  const { errors } = validateConfig(loadConfig(text), { mode: "container" });
  assert.deepEqual(
    errors.filter((e) => e.includes(".bond")),
    [
      ".machine.network.interfaces[0].bond: invalid bond type fastest",
      ".machine.network.interfaces[0].bond: bond.upDelay should be a multiple of miiMon",
      ".machine.network.interfaces[0].bond: bond.lacpRate is only available in 802.3ad mode",
      ".machine.network.interfaces[1].bond: bond.downDelay can't be set if miiMon is zero",
      ".machine.network.interfaces[1].bond: bond.primary is not available in balance-rr mode",
    ],
  );
});

test("warnings: join machine type and deprecated install extensions", () => {
  const text =
    "version: v1alpha1\nmachine:\n  type: join\n  ca:\n    crt: Y3J0\n  install:\n    disk: /dev/sda\n    extensions:\n      - image: ghcr.io/x/y:1\ncluster:\n  controlPlane:\n    endpoint: https://cp:6443\n";
  const r = validateConfig(loadConfig(text), { mode: "metal", installDisk: existing(["/dev/sda"]) });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.warnings, [
    '.machine.type: use "worker" instead of "join" for machine type',
    ".machine.install.extensions: .machine.install.extensions is deprecated, please see the documentation",
  ]);
});

test("CA requirements by machine type", () => {
  const errorsOf = (machine: string) =>
    validateConfig(
      loadConfig(`version: v1alpha1\nmachine:\n${machine}cluster:\n  controlPlane:\n    endpoint: https://cp:6443\n`),
      {
        mode: "container",
      },
    ).errors;
  assert.deepEqual(errorsOf("  type: controlplane\n  ca:\n    crt: Y3J0\n"), [
    ".machine.ca.key: issuing CA key is required for controlplane nodes (.machine.ca.key)",
  ]);
  assert.deepEqual(errorsOf('  type: worker\n  ca:\n    crt: ""\n    key: a2V5\n'), [
    ".machine.ca.key: issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)",
    ".machine.ca.crt: trusted CA certificates are required on non-controlplane nodes (.machine.ca.crt, .machine.acceptedCAs)",
  ]);
  assert.deepEqual(errorsOf("  type: worker\n  acceptedCAs:\n    - crt: Y3J0\n"), []);
});

test("cluster checks: CNI urls, DNS domain, inline manifests, discovery identity", () => {
  const text = `version: v1alpha1
machine:
  type: controlplane
  ca:
    crt: Y3J0
    key: a2V5
cluster:
  controlPlane:
    endpoint: https://cp:6443
  network:
    dnsDomain: "bad domain"
    cni:
      name: flannel
      urls: [https://example.com/cni.yaml]
  discovery:
    enabled: true
  inlineManifests:
    - name: a
      contents: x
    - name: a
      contents: y
    - name: " "
      contents: z
`;
  assert.deepEqual(validateConfig(loadConfig(text), { mode: "container" }).errors, [
    '.cluster.network.cni.urls: "urls" field should be empty for "flannel" CNI',
    '.cluster.network.dnsDomain: "bad domain" is not a valid DNS name',
    '.cluster.inlineManifests[1].name: inline manifest name "a" is duplicate',
    ".cluster.inlineManifests[2].name: inline manifest name can't be empty",
    ".cluster.id: cluster discovery service requires .cluster.id",
    ".cluster.secret: cluster discovery service requires .cluster.secret",
  ]);
  const custom = text.replace("name: flannel\n      urls: [https://example.com/cni.yaml]", "name: custom");
  assert.ok(
    validateConfig(loadConfig(custom), { mode: "container" }).warnings.includes(
      '.cluster.network.cni.urls: "urls" field should not be empty for "custom" CNI',
    ),
  );
});

test("other documents: value checks carry the kind", () => {
  const text =
    "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: 2s\n---\napiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: r\nportSelector:\n  ports: [0, 10-5, 80]\n  protocol: sctp\ningress:\n  - subnet: 10.0.0.0/8\n---\napiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: nohost\n";
  const { errors } = validateConfig(loadConfig(text), { mode: "container" });
  assert.deepEqual(errors, [
    "WatchdogTimerConfig: .timeout: watchdog timeout should be at least 10s",
    'NetworkRuleConfig "r": .portSelector.protocol: invalid value "sctp": must be one of ["tcp", "udp", "icmp", "icmpv6"]',
    'NetworkRuleConfig "r": .portSelector.ports[0]: invalid port 0',
    'NetworkRuleConfig "r": .portSelector.ports[1]: invalid port range "10-5"',
    'EventSinkConfig: .endpoint: invalid endpoint "nohost": expected host:port',
  ]);
});

test("defaults fill absent keys on read without touching the stored text", () => {
  const text = "version: v1alpha1\nmachine:\n  type: worker\n  install:\n    disk: /dev/sda\ncluster:\n  network: {}\n";
  const b = loadConfig(text);
  const d = b.v1alpha1WithDefaults()!;
  assert.equal(d.machine?.install?.image, defaults.installImage);
  assert.equal(d.machine?.features?.rbac, true);
  assert.equal(d.machine?.features?.kubePrism?.port, 7445);
  assert.deepEqual(d.cluster?.network?.podSubnets, ["10.244.0.0/16"]);
  assert.equal(d.persist, true);
  assert.equal(b.v1alpha1()?.machine?.install?.image, undefined);
  assert.equal(b.toYaml(), text);
  // Present values win over defaults; sections that are absent are not invented.
  const kept = applyDefaults({ machine: { features: { rbac: false } } });
  assert.equal(kept.machine?.features?.rbac, false);
  assert.equal(kept.machine?.install, undefined);
  assert.equal(kept.cluster, undefined);
});

test("assertValidConfig throws ConfigValidationError with every problem", async () => {
  const { assertValidConfig } = await import("../../../agent/src/config/index.js");
  const { ConfigValidationError } = await import("../../../agent/src/errors.js");
  const b = loadConfig("version: v1alpha1\n");
  assert.throws(
    () => assertValidConfig(b, { mode: "container" }),
    (err: unknown) =>
      err instanceof ConfigValidationError &&
      err.problems.length === 2 &&
      err.problems[0] === ".machine: machine instructions are required",
  );
  assert.deepEqual(assertValidConfig(loadConfig(stabilityConfigs[0].text), { mode: "container" }), []);
});
