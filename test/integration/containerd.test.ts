// The system containerd and an extension service through the real sandbox (machined + apid over
// mutual TLS) with Debian's containerd and runc: ext-hello (a static binary in its rootfs directory)
// gets its ExtensionServiceConfig file and environment, fails its first run and is restarted by its
// policy, shows in Containers and Stats, restarts on Restart, and stops with ServiceStop.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { NodeClient } from "../../agent/src/client/client.js";
import type { GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const containerdBin = "/usr/bin/containerd";
const skip =
  existsSync(containerdBin) && existsSync("/usr/bin/runc")
    ? false
    : "containerd and runc are not installed (scripts/setup-deps.sh)";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-ctd-"));
const dataDir = path.join(stateDir, "hello-data");
let sandbox: SandboxProcess;
const clients: NodeClient[] = [];
let admin: NodeClient;

interface ServiceInfo {
  id: string;
  state: string;
  events: { events: { msg: string; state: string }[] };
  health: { healthy: boolean; unknown: boolean };
}

async function service(id: string): Promise<ServiceInfo | undefined> {
  const reply = (await admin.serviceList()) as { messages: { services: ServiceInfo[] }[] };
  return reply.messages[0]!.services.find((s) => s.id === id);
}

async function untilState(
  id: string,
  state: string,
  also: (s: ServiceInfo) => boolean = () => true,
): Promise<ServiceInfo> {
  return eventually(async () => {
    const s = await service(id);
    if (s?.state !== state || !also(s))
      throw new Error(
        `${id} is ${s?.state}, waiting for ${state}; events: ${JSON.stringify(s?.events.events.slice(-4).map((e) => e.msg))}`,
      );
    return s;
  }, 300);
}

const runs = () => readFileSync(path.join(dataDir, "runs"), "utf8");
const code = (expected: grpc.status, details: RegExp) => (err: grpc.ServiceError) =>
  err.code === expected && details.test(err.details);

before(async () => {
  if (skip) return;
  const rootfs = path.join(stateDir, "usr/local/lib/containers/hello");
  mkdirSync(rootfs, { recursive: true });
  execFileSync("gcc", [
    "-static",
    "-O2",
    "-o",
    path.join(rootfs, "hello"),
    path.join(repo, "test/integration/helpers/hello-ext.c"),
  ]);
  mkdirSync(path.join(stateDir, "usr/local/etc/containers"), { recursive: true });
  writeFileSync(
    path.join(stateDir, "usr/local/etc/containers/hello.yaml"),
    [
      "name: hello",
      "container:",
      "  entrypoint: /hello",
      "  mounts:",
      `    - source: ${dataDir}`,
      "      destination: /data",
      "      type: bind",
      "      options: [rbind, rw]",
      "depends:",
      "  - configuration: true",
      "restart: always",
      "",
    ].join("\n"),
  );
  // ext-broken: its entrypoint is not in its rootfs.
  mkdirSync(path.join(stateDir, "usr/local/lib/containers/broken"), { recursive: true });
  writeFileSync(
    path.join(stateDir, "usr/local/etc/containers/broken.yaml"),
    ["name: broken", "container:", "  entrypoint: /missing", "restart: never", ""].join("\n"),
  );
  // What the image build writes for an extension it took in.
  mkdirSync(path.join(stateDir, "etc"), { recursive: true });
  writeFileSync(
    path.join(stateDir, "etc/extensions.yaml"),
    "layers:\n  - image: hello\n    metadata:\n      name: hello\n      version: 1.0.0\n      author: Basalt tests\n      description: says hello\n      compatibility:\n        talos:\n          version: '>= v1.7.0'\n",
  );
  // .machine.env reaches extension services; their own environment (GREETING) wins over it, as on Talos.
  const config = (generated: GeneratedConfigs) => {
    const withEnv = generated.controlplane.replace(
      /^machine:\n/m,
      "machine:\n    env:\n        SITE: from-machine-env\n        GREETING: from-machine-env\n",
    );
    assert.notEqual(withEnv, generated.controlplane);
    return `${withEnv}---\napiVersion: v1alpha1\nkind: ExtensionServiceConfig\nname: hello\nconfigFiles:\n  - content: hello-conf-line\n    mountPath: /etc/hello.conf\nenvironment:\n  - GREETING=bonjour\n`;
  };
  ({ sandbox, admin } = await startConfiguredSandbox({
    clusterName: "ctd",
    stateDir,
    args: ["--apid-in-process", "--containerd", containerdBin],
    config,
  }));
  clients.push(admin);
});

after(async () => {
  for (const c of clients) c.close();
  const pid = sandbox?.child.pid;
  await sandbox?.stop();
  // runc removes each container's own group; the sandbox's parents stay behind unless removed.
  for (const controller of existsSync("/sys/fs/cgroup") ? readdirSync("/sys/fs/cgroup") : []) {
    removeEmptyTree(path.join("/sys/fs/cgroup", controller, `basalt-sandbox-${pid}`));
  }
  removeEmptyTree(path.join("/sys/fs/cgroup", `basalt-sandbox-${pid}`));
  rmSync(stateDir, { recursive: true, force: true });
});

function removeEmptyTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) removeEmptyTree(path.join(dir, e.name));
  rmdirSync(dir);
}

test("containerd runs as a service: Running and healthy once its API answers", { skip }, async () => {
  const s = await untilState("containerd", "Running", (x) => x.health.healthy);
  assert.equal(s.health.unknown, false);
});

test("ext-hello: its first run fails (status 3) and restart: always runs it again, with its config file and environment", {
  skip,
}, async () => {
  const failedRun = (e: { msg: string }) => /exit code 3/.test(e.msg);
  const s = await untilState("ext-hello", "Running", (x) => x.events.events.some(failedRun));
  const events = s.events.events;
  const failed = events.findIndex(failedRun);
  // As Talos's restarter: the failed run is reported as Waiting (for the backoff), then it runs again.
  assert.deepEqual(
    events.slice(failed - 1, failed + 1).map((e) => e.state),
    ["Running", "Waiting"],
  );
  assert.equal(
    events[failed]!.msg,
    'Error running Containerd(ext-hello), going to restart forever: task "ext-hello" failed: exit code 3',
  );
  assert.equal(events.slice(failed + 1).find((e) => e.state !== "Waiting")?.state, "Running");
  assert.equal(runs(), "run 1\nrun 2\n");
  // Its output reaches machined's output as a process's does, first run and second.
  await eventually(async () => assert.match(sandbox.output(), /hello run 2 tick 1\n/));
  assert.match(sandbox.output(), /hello run 1 greeting=bonjour conf=hello-conf-line site=from-machine-env\n/);
  // And its log, as `talosctl logs ext-hello` reads it.
  const logged = await admin.collect<{ bytes: Buffer }>(admin.machine, "Logs", {
    namespace: "system",
    id: "ext-hello",
    driver: 0,
    follow: false,
    tail_lines: -1,
  });
  const text = Buffer.concat(logged.map((m) => m.bytes)).toString();
  assert.match(text, /^hello run 1 greeting=bonjour conf=hello-conf-line site=from-machine-env\n/m);
  assert.match(text, /^hello run 2 tick 1\n/m);
  assert.equal(
    readFileSync(path.join(stateDir, "system/overlays/extensions/hello/etc-hello.conf"), "utf8"),
    "hello-conf-line",
  );
});

test("ext-broken, whose entrypoint does not exist, is Failed with Talos's message and never Running; no container is left", {
  skip,
}, async () => {
  const s = await untilState("ext-broken", "Failed");
  const events = s.events.events.map((e) => [e.state, e.msg]);
  assert.deepEqual(events.slice(0, -1), [
    ["Starting", "Starting service"],
    ["Waiting", 'Waiting for service "containerd" to be "up"'],
    ["Preparing", "Running pre state"],
    ["Preparing", "Creating service runner"],
  ]);
  assert.equal(
    events.at(-1)![1],
    'Failed running service: error running service: failed to create task: "ext-broken": ' +
      "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: " +
      'exec: "/missing": stat /missing: no such file or directory: unknown',
  );
  const containers = await admin.unary<Containers>(admin.machine, "Containers", { namespace: "system", driver: 0 });
  assert.deepEqual(
    containers.messages[0]!.containers.filter((c) => c.id === "ext-broken"),
    [],
  );
});

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
    }[];
  }[];
};
type Stats = {
  messages: {
    stats: { namespace: string; id: string; pod_id: string; name: string; memory_usage: number; cpu_usage: number }[];
  }[];
};

test("ExtensionStatus lists the image's extensions (talosctl get extensions)", { skip }, async () => {
  const list = (await admin.resourceList("runtime", "ExtensionStatuses.runtime.talos.dev")) as {
    resource: { metadata: { id: string }; spec: { yaml_spec: string } };
  }[];
  assert.deepEqual(
    list.map((r) => r.resource.metadata.id),
    ["hello"],
  );
  assert.equal(
    list[0]!.resource.spec.yaml_spec,
    "image: hello\nmetadata:\n    name: hello\n    version: 1.0.0\n    author: Basalt tests\n    description: says hello\n    compatibility:\n        talos:\n            version: '>= v1.7.0'\n",
  );
});

test("Containers lists ext-hello's task (pid as the host sees it); Stats reports its cgroup's CPU and memory", {
  skip,
}, async () => {
  await untilState("ext-hello", "Running");
  const reply = await admin.unary<Containers>(admin.machine, "Containers", { namespace: "system", driver: 0 });
  const list = reply.messages[0]!.containers;
  assert.equal(list.length, 1);
  const c = list[0]!;
  assert.deepEqual(
    { ...c, pid: 0 },
    {
      namespace: "system",
      id: "ext-hello",
      pod_id: "ext-hello",
      name: "ext-hello",
      image: "",
      pid: 0,
      status: "RUNNING",
      network_namespace: "",
    },
  );
  assert.equal(readFileSync(`/proc/${c.pid}/cmdline`, "utf8"), "/hello\0");

  const stats = (await admin.unary<Stats>(admin.machine, "Stats", { namespace: "system", driver: 0 })).messages[0]!
    .stats;
  assert.deepEqual(
    stats.map((s) => [s.namespace, s.id, s.pod_id, s.name]),
    [["system", "ext-hello", "ext-hello", "ext-hello"]],
  );
  // The cgroup's own counters, read after the call: CPU time only grows, memory peaks bound the usage seen.
  const group = `basalt-sandbox-${sandbox.child.pid}/extensions/hello`;
  const v1 = existsSync(path.join("/sys/fs/cgroup/cpuacct", group));
  const cpuNow = v1
    ? Number(readFileSync(path.join("/sys/fs/cgroup/cpuacct", group, "cpuacct.usage"), "utf8"))
    : Number(/usage_usec (\d+)/.exec(readFileSync(path.join("/sys/fs/cgroup", group, "cpu.stat"), "utf8"))![1]) * 1000;
  const memPeak = Number(
    readFileSync(
      v1
        ? path.join("/sys/fs/cgroup/memory", group, "memory.max_usage_in_bytes")
        : path.join("/sys/fs/cgroup", group, "memory.peak"),
      "utf8",
    ),
  );
  assert.ok(
    stats[0]!.cpu_usage > 0 && stats[0]!.cpu_usage <= cpuNow,
    `cpu ${stats[0]!.cpu_usage} within (0, ${cpuNow}]`,
  );
  assert.ok(
    stats[0]!.memory_usage > 0 && stats[0]!.memory_usage <= memPeak,
    `memory ${stats[0]!.memory_usage} within (0, ${memPeak}]`,
  );

  await assert.rejects(
    admin.unary(admin.machine, "Containers", { namespace: "", driver: 0 }),
    code(grpc.status.INVALID_ARGUMENT, /namespace is required/),
  );
});

test("Restart sends SIGTERM to the container: it exits 0 and restart: always starts run 3", { skip }, async () => {
  const before = (await service("ext-hello"))!.events.events.length;
  await admin.unary(admin.machine, "Restart", { namespace: "system", id: "ext-hello", driver: 0 });
  await untilState(
    "ext-hello",
    "Running",
    (x) =>
      x.events.events.length > before + 1 &&
      x.events.events.slice(before).some((e) => /exited without error/.test(e.msg)),
  );
  assert.equal(runs(), "run 1\nrun 2\nrun 3\n");
  await assert.rejects(
    admin.unary(admin.machine, "Restart", { namespace: "system", id: "nosuch", driver: 0 }),
    code(grpc.status.NOT_FOUND, /container "nosuch" not found/),
  );
});

test("ServiceStop stops ext-hello (Finished, no container left); apid may not be stopped; an unknown id is refused (both Unknown, as Talos's plain errors)", {
  skip,
}, async () => {
  const reply = await admin.unary<{ messages: { resp: string }[] }>(admin.machine, "ServiceStop", { id: "ext-hello" });
  assert.equal(reply.messages[0]!.resp, 'Service "ext-hello" stopped');
  const s = (await service("ext-hello"))!;
  assert.equal(s.state, "Finished");
  const containers = await admin.unary<Containers>(admin.machine, "Containers", { namespace: "system", driver: 0 });
  assert.deepEqual(containers.messages[0]!.containers, []);
  assert.equal(runs(), "run 1\nrun 2\nrun 3\n");
  await assert.rejects(
    admin.unary(admin.machine, "ServiceStop", { id: "apid" }),
    code(grpc.status.UNKNOWN, /^service "apid" doesn't support stop operation via API$/),
  );
  await assert.rejects(
    admin.unary(admin.machine, "ServiceStop", { id: "nosuch" }),
    code(grpc.status.UNKNOWN, /^service "nosuch" not defined$/),
  );
});
