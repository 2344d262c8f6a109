// The CRI containerd as the `cri` service of a sandbox whose config has a cluster (Debian's containerd
// with its CRI plugin, its socket and directories under the sandbox's state directory), with
// `.machine.registries` mirroring registry.k8s.io and registry.basalt.test to Debian's docker-registry
// on loopback (HTTPS with its own CA, token authentication): the service becomes healthy; CRI
// PullImage goes through the mirror; the ImageRunner runs a program from an image in namespace
// `system` with host network and a given uid; a host-network pod made with the CRI API shows in
// Containers and Stats -k as `ns/pod` ids, Logs -k reads its container's log file (and follows it),
// Restart -k stops it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { parse, stringify } from "yaml";
import type { NodeClient } from "../../agent/src/client/client.js";
import type { GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { ImageRunner } from "../../agent/src/services/containerd/image-runner.js";
import type { Registries } from "../../agent/src/services/images/registry.js";
import { Supervisor } from "../../agent/src/services/supervisor.js";
import { ContainerdClient } from "../../agent/src/sys/containerd/client.js";
import { CriClient } from "../../agent/src/sys/cri/client.js";
import { capabilityNames } from "../../agent/src/sys/capabilities.js";
import { buildImage, pushImage, type TestImage } from "./helpers/oci-image.js";
import { startRegistry, type TestRegistry } from "./helpers/registry.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const skip = ["/usr/bin/containerd", "/usr/bin/runc", "/usr/bin/docker-registry", "/usr/bin/gcc"].every(existsSync)
  ? false
  : "containerd, runc, docker-registry or gcc is not installed (scripts/setup-deps.sh)";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-cri-"));
const stateDir = path.join(work, "state");
const criSocket = path.join(stateDir, "run", "containerd", "containerd.sock");
const cgroupParent = `/basalt-cri-test-${process.pid}`;
let registry: TestRegistry;
let sandbox: SandboxProcess;
let admin: NodeClient;
let cri: CriClient;
let hello: TestImage;
let pause: TestImage;
let registries: Registries;
const closers: (() => unknown)[] = [];

type Containers = {
  messages: {
    containers: {
      namespace: string;
      id: string;
      pod_id: string;
      name: string;
      image: string;
      pid: number;
      status: string;
      network_namespace: string;
    }[];
  }[];
};
type Stats = {
  messages: {
    stats: { namespace: string; id: string; pod_id: string; name: string; memory_usage: number; cpu_usage: number }[];
  }[];
};
const code = (expected: grpc.status, details: RegExp) => (err: grpc.ServiceError) =>
  err.code === expected && details.test(err.details);

async function serviceState(id: string): Promise<{ state: string; healthy: boolean } | undefined> {
  const list = (await admin.serviceList()) as {
    messages: { services: { id: string; state: string; health: { healthy: boolean } }[] }[];
  };
  const s = list.messages[0]!.services.find((x) => x.id === id);
  return s && { state: s.state, healthy: s.health.healthy };
}

// Merged into the generated CRI plugin settings key by key (Talos's CRI config parts).
const customization = '[plugins."io.containerd.grpc.v1.cri"]\n  enable_unprivileged_ports = true\n';

before(async () => {
  if (skip) return;
  registry = await startRegistry(path.join(work, "registry"));
  const bin = path.join(work, "bin");
  execFileSync("mkdir", ["-p", bin]);
  execFileSync("gcc", [
    "-static",
    "-O2",
    "-o",
    path.join(bin, "hello"),
    path.join(repo, "test/integration/helpers/cri-hello.c"),
  ]);
  execFileSync("gcc", [
    "-static",
    "-O2",
    "-o",
    path.join(bin, "pause"),
    path.join(repo, "test/integration/helpers/pause.c"),
  ]);
  hello = buildImage(
    work,
    { hello: path.join(bin, "hello") },
    { Entrypoint: ["/hello"], Cmd: ["from-image-cmd"], Env: ["PATH=/", "FROM_IMAGE=1"] },
  );
  pause = buildImage(work, { pause: path.join(bin, "pause") }, { Entrypoint: ["/pause"] });
  await pushImage(registry, "basalt/hello", "v1", hello);
  await pushImage(registry, "pause", "3.8", pause);

  registries = {
    mirrors: {
      "registry.k8s.io": { endpoints: [`https://${registry.host}`] },
      "registry.basalt.test": { endpoints: [`https://${registry.host}`] },
    },
    config: {
      [registry.host]: {
        tls: { ca: Buffer.from(registry.ca).toString("base64") },
        auth: { username: registry.username, password: registry.password },
      },
    },
  };
  const config = (generated: GeneratedConfigs) => {
    const docs = generated.controlplane.split(/^---\n/m);
    const machineConfig = parse(docs[0]!) as { machine: Record<string, unknown> };
    machineConfig.machine.registries = registries;
    machineConfig.machine.files = [
      { op: "create", path: "/etc/cri/conf.d/20-customization.part", content: customization },
    ];
    docs[0] = stringify(machineConfig);
    return docs.join("---\n");
  };
  ({ sandbox, admin } = await startConfiguredSandbox({
    clusterName: "cri",
    stateDir,
    args: ["--apid-in-process", "--containerd", "/usr/bin/containerd", "--cri", "/usr/bin/containerd"],
    config,
  }));
  closers.push(() => admin.close());
  cri = new CriClient(criSocket);
  closers.push(() => cri.close());
});

after(async () => {
  // Pods first (their shims hold the sandbox's mounts), then the sandbox, then the cgroups runc left.
  if (cri) {
    for (const c of await cri.listContainers().catch(() => [])) {
      await cri.stopContainer(c.id, 0).catch(() => undefined);
      await cri.removeContainer(c.id).catch(() => undefined);
    }
    for (const s of await cri.listPodSandbox().catch(() => [])) {
      await cri.stopPodSandbox(s.id).catch(() => undefined);
      await cri.removePodSandbox(s.id).catch(() => undefined);
    }
  }
  for (const close of closers.reverse()) await close();
  await sandbox?.stop();
  await registry?.stop();
  for (const controller of existsSync("/sys/fs/cgroup") ? readdirSync("/sys/fs/cgroup") : [])
    removeEmptyTree(path.join("/sys/fs/cgroup", controller, cgroupParent));
  removeEmptyTree(path.join("/sys/fs/cgroup", cgroupParent));
  execFileSync("sh", [
    "-c",
    `grep -o ' ${work}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true`,
  ]);
  if (!process.env.BASALT_KEEP_TEST_DIR) rmSync(work, { recursive: true, force: true });
});

function removeEmptyTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) removeEmptyTree(path.join(dir, e.name));
  try {
    rmdirSync(dir);
  } catch (err) {
    console.error(`cgroup ${dir} left behind: ${(err as Error).message}`);
  }
}

test("cri runs once the config has a cluster: Running and healthy (Version over its socket); its hosts directory mirrors the config", {
  skip,
}, async () => {
  await eventually(async () => {
    const s = await serviceState("cri");
    assert.deepEqual(s, { state: "Running", healthy: true });
  }, 600);
  const version = await cri.version();
  assert.equal(version.runtime_name, "containerd");
  assert.equal(version.runtime_api_version, "v1");
  const hosts = path.join(stateDir, "system", "etc", "cri", "conf.d", "hosts");
  const dir = registry.host.replace(/:(\d+)$/, "_$1_");
  assert.deepEqual(readdirSync(hosts).sort(), [dir, "registry.basalt.test", "registry.k8s.io"].sort());
  assert.equal(
    readFileSync(path.join(hosts, "registry.k8s.io", "hosts.toml"), "utf8"),
    `\n[host]\n\n  [host."https://${registry.host}"]\n    capabilities = ["pull", "resolve"]\n    ca = "${path.join(hosts, "registry.k8s.io", `${registry.host}-ca.crt`)}"\n`,
  );
  assert.equal(readFileSync(path.join(hosts, "registry.k8s.io", `${registry.host}-ca.crt`), "utf8"), registry.ca);
});

test("the config's 20-customization.part is merged into the CRI plugin's settings containerd runs with", {
  skip,
}, async () => {
  const { info } = await cri.status();
  const config = JSON.parse(info.config!) as {
    enableUnprivilegedPorts: boolean;
    sandboxImage: string;
    registry: { configPath: string };
    containerd: { runtimes: Record<string, { runtimeType: string }> };
  };
  assert.equal(config.enableUnprivilegedPorts, true);
  // The generated settings beside it are kept.
  assert.equal(config.sandboxImage, "registry.k8s.io/pause:3.8");
  assert.equal(config.registry.configPath, path.join(stateDir, "system", "etc", "cri", "conf.d", "hosts"));
  assert.equal(config.containerd.runtimes.runc!.runtimeType, "io.containerd.runc.v2");
});

test("CRI PullImage goes through the registry.basalt.test mirror (CA and token auth from the config); ImageList NS_CRI lists it", {
  skip,
}, async () => {
  const ref = await cri.pullImage("registry.basalt.test/basalt/hello:v1");
  assert.equal(ref, hello.id);
  assert.ok(
    registry.tokenRequests.includes("repository:basalt/hello:pull"),
    `token scopes: ${registry.tokenRequests.join(" ")}`,
  );
  const stream = admin.machine.ImageList({ namespace: 2 }, admin.metadata()) as grpc.ClientReadableStream<{
    name: string;
    digest: string;
  }>;
  const names: [string, string][] = [];
  for await (const i of stream) names.push([i.name, i.digest]);
  assert.ok(
    names.some(([n, d]) => n === "registry.basalt.test/basalt/hello:v1" && d === hello.digest),
    JSON.stringify(names),
  );
});

test("the ImageRunner runs the image's program in namespace system: pulled through the mirror, host network, uid 4242, output in the service log; stop is SIGTERM", {
  skip,
}, async (t) => {
  const client = new ContainerdClient(criSocket, "system");
  t.after(() => client.close());
  const supervisor = new Supervisor({ healthIntervalMs: 60_000, restartIntervalMs: 60_000 });
  t.after(() => supervisor.stopAll());
  const runner = new ImageRunner({
    id: "hello-img",
    image: "registry.basalt.test/basalt/hello:v1",
    client: () => client,
    registries: () => registries,
    process: async () => ({
      args: [],
      env: ["FROM_SERVICE=1"],
      readonlyRootfs: true,
      mounts: [],
      hostFiles: {},
      user: { uid: 4242, gid: 4343 },
      capabilities: [],
      heldCapabilities: new Set(capabilityNames),
    }),
    logFile: path.join(work, "logs", "hello-img.log"),
  });
  await supervisor.start({ id: "hello-img", runner, restart: "never", cgroup: `${cgroupParent}/hello-img` });
  assert.equal(
    supervisor.get("hello-img")?.state,
    "Running",
    JSON.stringify(supervisor.get("hello-img")?.events.map((e) => e.msg)),
  );
  const text = () => Buffer.concat(supervisor.logs.read("hello-img", -1).lines).toString();
  await eventually(async () => assert.match(text(), /^tick 2$/m));
  // The image's entrypoint and cmd (no args given), run as the given user.
  assert.match(text(), /^hello uid=4242 gid=4343 from-image-cmd$/m);
  const pid = runner.pid!;
  assert.equal(readlinkSync(`/proc/${pid}/ns/net`), readlinkSync("/proc/self/ns/net"));
  assert.notEqual(readlinkSync(`/proc/${pid}/ns/pid`), readlinkSync("/proc/self/ns/pid"));
  // The image's environment, then the service's; runc adds HOME for a user without one.
  const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  assert.deepEqual(
    environ.filter((e) => e.length > 0),
    ["PATH=/", "FROM_IMAGE=1", "FROM_SERVICE=1", "HOME=/"],
  );
  assert.equal(/^CapEff:\s+(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1], "0000000000000000");
  const containers = await client.listContainers();
  assert.deepEqual(
    containers.map((c) => [c.id, c.image, c.snapshotter, c.snapshot_key]),
    [["hello-img", "registry.basalt.test/basalt/hello:v1", "overlayfs", "hello-img"]],
  );

  await supervisor.stop("hello-img");
  assert.equal(supervisor.get("hello-img")?.state, "Finished");
  await eventually(async () => assert.match(text(), /^bye$/m));
  assert.deepEqual(await client.listContainers(), []);
  assert.equal(await client.hasSnapshot("overlayfs", "hello-img"), false);
});

const podLabels = {
  "io.kubernetes.pod.name": "hello-pod",
  "io.kubernetes.pod.namespace": "kube-system",
  "io.kubernetes.pod.uid": "0000-1111",
};

test("a host-network pod made with the CRI API shows in Containers and Stats -k as Talos's ids; Logs -k reads and follows its log file; Restart -k stops it", {
  skip,
}, async () => {
  const logDirectory = path.join(stateDir, "var", "log", "pods", "kube-system_hello-pod_0000-1111");
  const sandboxConfig = {
    metadata: { name: "hello-pod", namespace: "kube-system", uid: "0000-1111", attempt: 0 },
    // A host-network pod shares the host's UTS namespace: no hostname of its own.
    log_directory: logDirectory,
    labels: podLabels,
    linux: {
      cgroup_parent: `${cgroupParent}/pods`,
      security_context: { namespace_options: { network: 2, pid: 1, ipc: 0 } },
    },
  };
  const podId = await cri.runPodSandbox(sandboxConfig, 120_000);
  const containerId = await cri.createContainer(
    podId,
    {
      metadata: { name: "hello", attempt: 0 },
      image: { image: "registry.basalt.test/basalt/hello:v1" },
      args: ["in-a-pod"],
      log_path: "hello/0.log",
      labels: { ...podLabels, "io.kubernetes.container.name": "hello" },
      linux: { security_context: { namespace_options: { network: 2, pid: 1, ipc: 0 } } },
    },
    sandboxConfig,
  );
  await cri.startContainer(containerId);

  const listed = (await admin.unary<Containers>(admin.machine, "Containers", { namespace: "k8s.io", driver: 1 }))
    .messages[0]!.containers;
  const shown = listed.map((c) => ({ ...c, pid: c.pid > 0 }));
  assert.deepEqual(shown, [
    {
      namespace: "k8s.io",
      id: "kube-system/hello-pod",
      pod_id: "kube-system/hello-pod",
      name: "kube-system/hello-pod",
      image: "registry.k8s.io/pause:3.8",
      pid: true,
      status: "SANDBOX_READY",
      network_namespace: "",
    },
    {
      namespace: "k8s.io",
      id: `kube-system/hello-pod:hello:${containerId.slice(0, 12)}`,
      pod_id: "kube-system/hello-pod",
      name: "hello",
      image: "registry.basalt.test/basalt/hello:v1",
      pid: true,
      status: "CONTAINER_RUNNING",
      network_namespace: "",
    },
  ]);
  assert.equal(readFileSync(`/proc/${listed[0]!.pid}/cmdline`, "utf8"), "/pause\0");
  assert.equal(readFileSync(`/proc/${listed[1]!.pid}/cmdline`, "utf8"), "/hello\0in-a-pod\0");

  // Stats: the sandbox counts as using nothing (as Talos); the container's CPU and memory come from CRI.
  const stats = await eventually(async () => {
    const s = (await admin.unary<Stats>(admin.machine, "Stats", { namespace: "k8s.io", driver: 1 })).messages[0]!.stats;
    assert.ok(s[1] && s[1].cpu_usage > 0 && s[1].memory_usage > 0, JSON.stringify(s));
    return s;
  });
  assert.deepEqual(
    stats.map((s) => [s.id, s.pod_id, s.name]),
    [
      ["kube-system/hello-pod", "kube-system/hello-pod", "kube-system/hello-pod"],
      [`kube-system/hello-pod:hello:${containerId.slice(0, 12)}`, "kube-system/hello-pod", "hello"],
    ],
  );
  assert.deepEqual([stats[0]!.cpu_usage, stats[0]!.memory_usage], [0, 0]);

  // Logs -k: the CRI log file as it is, `<time> stdout F <line>`, tail and all.
  const file = path.join(logDirectory, "hello", "0.log");
  await eventually(async () => assert.match(readFileSync(file, "utf8"), / stdout F tick 3\n/));
  const logs = async (tail: number) =>
    Buffer.concat(
      (
        await admin.collect<{ bytes: Buffer }>(admin.machine, "Logs", {
          namespace: "k8s.io",
          driver: 1,
          id: "kube-system/hello-pod:hello",
          follow: false,
          tail_lines: tail,
        })
      ).map((m) => m.bytes),
    ).toString();
  const all = await logs(-1);
  assert.match(all, /^\S+ stdout F hello uid=0 gid=0 in-a-pod\n\S+ stdout F tick 1\n/);
  assert.ok(readFileSync(file, "utf8").startsWith(all), "the log is the file's content");
  const two = await logs(2);
  assert.equal(two.split("\n").length, 3, two);
  assert.ok(all.includes(two) || readFileSync(file, "utf8").includes(two));

  // With follow: the last line, then what the container writes after the call started.
  const lastTick = Number(/tick (\d+)\n$/.exec(readFileSync(file, "utf8"))![1]);
  const stream = admin.machine.Logs(
    {
      namespace: "k8s.io",
      driver: 1,
      id: `kube-system/hello-pod:hello:${containerId.slice(0, 12)}`,
      follow: true,
      tail_lines: 1,
    },
    admin.metadata(),
  ) as grpc.ClientReadableStream<{ bytes: Buffer }>;
  let followed = "";
  for await (const m of stream) {
    followed += m.bytes.toString();
    if (new RegExp(` stdout F tick ${lastTick + 3}\n`).test(followed)) break;
  }
  stream.cancel();
  const ticks = [...followed.matchAll(/ stdout F tick (\d+)\n/g)].map((m) => Number(m[1]));
  assert.deepEqual(
    ticks,
    Array.from({ length: ticks.length }, (_, i) => ticks[0]! + i),
    followed,
  );
  assert.ok(ticks[0]! >= lastTick && ticks.at(-1)! >= lastTick + 3, followed);

  // The containerd driver in namespace k8s.io asks the CRI containerd too (Talos picks its address for any namespace but system).
  const tasks = (await admin.unary<Containers>(admin.machine, "Containers", { namespace: "k8s.io", driver: 0 }))
    .messages[0]!.containers;
  assert.deepEqual(tasks.map((c) => c.id).sort(), [podId, containerId].sort());

  // Restart -k stops the container as Talos's CRI inspector does (the kubelet would start it again).
  await admin.unary(admin.machine, "Restart", { namespace: "k8s.io", driver: 1, id: "kube-system/hello-pod:hello" });
  const after = (await admin.unary<Containers>(admin.machine, "Containers", { namespace: "k8s.io", driver: 1 }))
    .messages[0]!.containers;
  assert.deepEqual(
    after.map((c) => c.status),
    ["SANDBOX_READY", "CONTAINER_EXITED"],
  );
  assert.match(readFileSync(file, "utf8"), / stdout F bye\n$/);

  await assert.rejects(
    admin.unary(admin.machine, "Containers", { namespace: "system", driver: 1 }),
    code(grpc.status.INVALID_ARGUMENT, /CRI inspector is supported only for K8s namespace/),
  );
  await assert.rejects(
    admin.collect(admin.machine, "Logs", {
      namespace: "k8s.io",
      driver: 1,
      id: "kube-system/nosuch:x",
      follow: false,
      tail_lines: -1,
    }),
    code(grpc.status.NOT_FOUND, /container "kube-system\/nosuch:x" not found/),
  );
});

test("a kubelet image that cannot be pulled is a service waiting to restart, an event and a log line; the API answers", {
  skip,
}, async () => {
  // ghcr.io has no mirror in this config and the host reaches no registry but the test's.
  type Listed = { messages: { services: { id: string; state: string; events: { events: { msg: string }[] } }[] }[] };
  const failure = /^Error running kubelet, going to restart forever: /;
  const kubelet = await eventually(async () => {
    const s = ((await admin.serviceList()) as Listed).messages[0]!.services.find((x) => x.id === "kubelet");
    assert.ok(s, "the kubelet service");
    assert.ok(
      s.events.events.some((e) => failure.test(e.msg)),
      JSON.stringify(s.events),
    );
    return s;
  }, 600);
  assert.ok(["Waiting", "Preparing"].includes(kubelet.state), kubelet.state);
  assert.match(sandbox.output(), /service\[kubelet\]\(Waiting\): Error running kubelet, going to restart forever: /);
  assert.ok(await admin.version());
});
