// Extension service files as Talos validates them, environment files, containerd's generated
// configuration, the OCI spec's capabilities, and task metrics as Stats reads them.
import assert from "node:assert/strict";
import test from "node:test";
import { parseEnvironmentFile, parseExtensionService } from "../../../agent/src/services/extensions/spec.js";
import { containerdConfig } from "../../../agent/src/services/definitions/containerd.js";
import { ociSpec } from "../../../agent/src/services/containerd/oci-spec.js";
import { encodeMessage } from "../../../agent/src/sys/containerd/protos.js";
import { metricsFrom } from "../../../agent/src/machined/rpc/containers.js";
import { parseExtensionsYaml } from "../../../agent/src/controllers/runtime/extension-status.js";

test("parseExtensionService reads Talos's service file", () => {
  const spec = parseExtensionService(
    [
      "name: hello",
      "container:",
      "  entrypoint: /hello",
      "  args: [-v]",
      "  environment: [A=1]",
      "  mounts:",
      "    - {source: /var/hello, destination: /data, type: bind, options: [rbind, rw]}",
      "depends:",
      "  - service: cri",
      "  - path: /system/run/x",
      "  - network: [addresses, connectivity]",
      "  - time: true",
      "restart: untilSuccess",
    ].join("\n"),
    "hello.yaml",
  );
  assert.equal(spec.name, "hello");
  assert.deepEqual(spec.container.args, ["-v"]);
  assert.deepEqual(spec.container.mounts, [
    { destination: "/data", type: "bind", source: "/var/hello", options: ["rbind", "rw"] },
  ]);
  assert.deepEqual(spec.depends, [
    { service: "cri" },
    { path: "/system/run/x" },
    { network: ["addresses", "connectivity"] },
    { time: true },
  ]);
  assert.equal(spec.restart, "untilSuccess");
  assert.equal(spec.container.security.writeableRootfs, false);
});

test("parseExtensionService reports every problem Talos reports", () => {
  assert.throws(
    () =>
      parseExtensionService(
        [
          "name: Bad Name",
          "container: {}",
          "depends:",
          "  - {}",
          "  - {path: rel, time: true}",
          "  - network: [nosuch]",
          "restart: sometimes",
        ].join("\n"),
        "bad.yaml",
      ),
    (err: Error) =>
      err.message ===
      'bad.yaml: name "Bad Name" is invalid; restart kind is invalid: sometimes; container endpoint can\'t be empty; no dependency specified; path is not absolute: "rel"; more than a single dependency is set; invalid network dependency: nosuch',
  );
});

test("parseEnvironmentFile: KEY=value lines, comments, export, quotes", () => {
  assert.deepEqual(parseEnvironmentFile("# c\nA=1\nexport B=\"two words\"\n\nC='x'\n"), ["A=1", "B=two words", "C=x"]);
  assert.throws(() => parseEnvironmentFile("novalue\n"), /not KEY=value/);
});

test("containerdConfig: our paths, no CRI plugin", () => {
  const text = containerdConfig({
    socket: "/system/run/containerd/containerd.sock",
    state: "/run/containerd",
    root: "/var/lib/containerd",
    config: "/c.toml",
  });
  assert.match(
    text,
    /^version = 2\nroot = "\/var\/lib\/containerd"\nstate = "\/run\/containerd"\ndisabled_plugins = \["io.containerd.grpc.v1.cri"\]\n/,
  );
  assert.match(text, /\[grpc\]\n {2}address = "\/system\/run\/containerd\/containerd.sock"/);
});

test("ociSpec grants every held capability but CAP_SYS_BOOT and CAP_SYS_MODULE", () => {
  const spec = ociSpec({
    args: ["/x"],
    env: [],
    rootfs: "/r",
    readonlyRootfs: true,
    mounts: [],
    cgroupsPath: "/system/extensions/x",
    hostFiles: {},
    heldCapabilities: new Set(["CAP_CHOWN", "CAP_SYS_BOOT", "CAP_SYS_MODULE", "CAP_NET_ADMIN"]),
  }) as {
    process: { capabilities: { bounding: string[] }; oomScoreAdj?: number };
    root: { readonly: boolean };
  };
  assert.deepEqual(spec.process.capabilities.bounding, ["CAP_CHOWN", "CAP_NET_ADMIN"]);
  assert.equal(spec.process.oomScoreAdj, undefined);
  assert.equal(spec.root.readonly, true);
});

test("ociSpec for the kubelet: the host's PID namespace, and every sysfs mount read-write with writeableSysfs", () => {
  const spec = ociSpec({
    args: ["/kubelet"],
    env: [],
    rootfs: "rootfs",
    readonlyRootfs: false,
    cgroupsPath: "/podruntime/kubelet",
    hostFiles: {},
    heldCapabilities: new Set(),
    mounts: [
      { destination: "/sys", type: "sysfs", source: "/sys", options: ["bind", "ro"] },
      { destination: "/lib/modules", type: "bind", source: "/lib/modules", options: ["bind", "ro"] },
    ],
    writeableSysfs: true,
    hostPid: true,
  }) as { mounts: { destination: string; options: string[] }[]; linux: { namespaces: { type: string }[] } };
  assert.deepEqual(
    spec.linux.namespaces.map((n) => n.type),
    ["ipc", "uts", "mount"],
  );
  assert.deepEqual(
    spec.mounts.filter((m) => m.destination === "/sys").map((m) => m.options),
    [
      ["nosuid", "noexec", "nodev", "rw"],
      ["bind", "rw"],
    ],
  );
  assert.deepEqual(spec.mounts.find((m) => m.destination === "/lib/modules")?.options, ["bind", "ro"]);
});

test("metricsFrom: cgroup v1 (usage less inactive file, CPU total) and v2 (usage, usec as ns)", () => {
  const v1 = encodeMessage("io.containerd.cgroups.V1Metrics", {
    cpu: { usage: { total: 123456 } },
    memory: { total_inactive_file: 1000, usage: { usage: 5000 } },
  });
  assert.deepEqual(metricsFrom({ type_url: "io.containerd.cgroups.v1.Metrics", value: v1 }), {
    memoryUsage: 4000,
    cpuUsage: 123456,
  });
  const v2 = encodeMessage("io.containerd.cgroups.V2Metrics", { cpu: { usage_usec: 42 }, memory: { usage: 7000 } });
  assert.deepEqual(metricsFrom({ type_url: "io.containerd.cgroups.v2.Metrics", value: v2 }), {
    memoryUsage: 7000,
    cpuUsage: 42000,
  });
  assert.throws(() => metricsFrom({ type_url: "other", value: Buffer.alloc(0) }), /unknown task metrics type/);
});

test("parseExtensionsYaml: one ExtensionStatus per layer, id without .sqsh", () => {
  const layers = parseExtensionsYaml(
    "layers:\n  - image: 000.hello.sqsh\n    metadata:\n      name: hello\n      version: 1.0.0\n      author: Basalt\n      description: says hello\n      compatibility:\n        talos:\n          version: '>= v1.7.0'\n",
  );
  assert.deepEqual(
    [...layers],
    [
      [
        "000.hello",
        {
          image: "000.hello.sqsh",
          metadata: {
            name: "hello",
            version: "1.0.0",
            author: "Basalt",
            description: "says hello",
            compatibility: { talos: { version: ">= v1.7.0" } },
          },
        },
      ],
    ],
  );
});
