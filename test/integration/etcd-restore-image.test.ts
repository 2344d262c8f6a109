// talosctl bootstrap --recover-from with etcdutl run from etcd's image, as on a node (whose root
// filesystem has no etcdutl): a real etcd v3.5.13 member takes a snapshot over EtcdSnapshot, the
// snapshot is uploaded with EtcdRecover, and Bootstrap restores it through one-shot tasks of the
// image (pulled from Debian's docker-registry through a gcr.io mirror, HTTPS with token auth) in a
// real containerd's namespace `system`; etcd then starts on the restored directory with the keys. A
// damaged upload fails the service with etcdutl's own error, and a good one after it restores.
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { EtcdRootSpec } from "../../agent/src/resources/catalog/etcd.js";
import { addLogTap } from "../../agent/src/log.js";
import { etcdutlImage, etcdutlTaskId } from "../../agent/src/services/definitions/etcdutl-image.js";
import type { Registries } from "../../agent/src/services/images/registry.js";
import { boundingCapabilities } from "../../agent/src/sys/capabilities.js";
import { ContainerdClient } from "../../agent/src/sys/containerd/client.js";
import { snapshotStatusArgs } from "../../agent/src/sys/etcd/restore.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";
import { buildImage, pushImage } from "./helpers/oci-image.js";
import { registryBinary, startRegistry, type TestRegistry } from "./helpers/registry.js";

const skip = ["/usr/bin/containerd", "/usr/bin/runc", registryBinary].every(existsSync)
  ? false
  : "containerd, runc or docker-registry is not installed (scripts/setup-deps.sh)";
const run = promisify(execFile);

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-etcd-restore-"));
const containerdDir = path.join(work, "containerd");
const socket = path.join(containerdDir, "containerd.sock");
const cgroupParent = `/basalt-etcdutl-test-${process.pid}`;
const image = "gcr.io/etcd-development/etcd:v3.5.13";
let binaries: { etcd: string; etcdutl: string };
let root: EtcdRootSpec;
let registry: TestRegistry;
let registries: Registries;
let containerd: ChildProcess;
let client: ContainerdClient;
let node: EtcdNode;

before(
  async () => {
    if (skip) return;
    binaries = etcdBinaries();
    root = await etcdRoot();
    registry = await startRegistry(path.join(work, "registry"));
    // etcd's image as far as a restore needs it: etcdutl where upstream's image (and ours) has it.
    const etcdutlOnly = buildImage(
      work,
      { "usr/local/bin/etcdutl": binaries.etcdutl },
      { Cmd: ["/usr/local/bin/etcd"], Env: ["PATH=/usr/local/bin:/usr/bin:/bin"] },
    );
    await pushImage(registry, "etcd-development/etcd", "v3.5.13", etcdutlOnly);
    registries = {
      mirrors: { "gcr.io": { endpoints: [`https://${registry.host}`] } },
      config: {
        [registry.host]: {
          tls: { ca: Buffer.from(registry.ca).toString("base64") },
          auth: { username: registry.username, password: registry.password },
        },
      },
    };

    mkdirSync(containerdDir, { recursive: true });
    const config = path.join(containerdDir, "config.toml");
    writeFileSync(
      config,
      [
        "version = 2",
        `root = "${containerdDir}/root"`,
        `state = "${containerdDir}/state"`,
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        "[grpc]",
        `  address = "${socket}"`,
        "",
      ].join("\n"),
    );
    containerd = spawn("/usr/bin/containerd", ["--config", config], { stdio: "ignore" });
    // Ready when it answers on its socket; bounded, so a containerd that never comes up fails the suite.
    for (
      let i = 0;
      !(await run("ctr", ["--address", socket, "version"]).then(
        () => true,
        () => false,
      ));
      i++
    ) {
      if (i === 100) throw new Error("containerd did not answer on its socket in 20 s");
      await sleep(200);
    }
    client = new ContainerdClient(socket, "system");

    node = await etcdNode({
      name: "cp-1",
      root,
      // No host etcdutl: a restore that fell back to one would fail.
      binaries: { etcd: binaries.etcd, etcdutl: path.join(work, "no-etcdutl-on-the-host") },
      etcdutl: (paths) =>
        etcdutlImage({
          client: () => client,
          registries: () => registries,
          paths,
          outputDir: path.join(work, "etcdutl-output"),
          heldCapabilities: boundingCapabilities(),
          cgroupsPath: `${cgroupParent}/etcdutl`,
        }),
    });
  },
  { timeout: 20 * 60 * 1000 },
);

after(async () => {
  await node?.close();
  client?.close();
  if (containerd && containerd.exitCode === null) {
    const exited = new Promise((resolve) => containerd.once("exit", resolve));
    containerd.kill();
    await exited;
  }
  await registry?.stop();
  for (const controller of existsSync("/sys/fs/cgroup") ? readdirSync("/sys/fs/cgroup") : [])
    removeEmptyTree(path.join("/sys/fs/cgroup", controller, cgroupParent));
  removeEmptyTree(path.join("/sys/fs/cgroup", cgroupParent));
  execFileSync("sh", [
    "-c",
    `grep -o ' ${work}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true`,
  ]);
  rmSync(work, { recursive: true, force: true });
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

test("Bootstrap --recover-from restores a real etcd's snapshot through etcdutl tasks of etcd's image; etcd starts with its keys", {
  skip,
  timeout: 10 * 60 * 1000,
}, async () => {
  void node.startWaiting();
  assert.deepEqual(await node.call("Bootstrap"), { messages: [{ metadata: null }] });
  await node.until("Running");
  const keys: [string, Buffer][] = [
    ["/basalt/restore/a", Buffer.from("one")],
    ["/basalt/restore/b", Buffer.from([0, 1, 2, 0xff, 0xfe, ...Buffer.from("bytes \u00e9")])],
    ["/registry/namespaces/default", Buffer.from('{"kind":"Namespace"}')],
  ];
  const c = await node.client();
  let revision = 0;
  for (const [k, v] of keys) revision = Number((await c.put(k, v)).revision);
  c.close();
  const snapshot = Buffer.concat((await node.stream("EtcdSnapshot")).map((m) => m.bytes as Buffer));

  // What the same etcdutl says of the snapshot on the host: the values the restore must log.
  const snapshotFile = path.join(work, "etcd.snapshot");
  writeFileSync(snapshotFile, snapshot);
  const hostStatus = JSON.parse((await run(binaries.etcdutl, snapshotStatusArgs(snapshotFile))).stdout) as {
    hash: number;
    revision: number;
    totalKey: number;
    totalSize: number;
  };
  assert.equal(hostStatus.revision, revision);

  await node.supervisor.stop("etcd");
  await rm(node.paths.dataDir, { recursive: true, force: true });

  // A damaged upload (its SHA-256 trailer off by one bit): its status reads, its restore fails in its
  // task, and the service fails with etcdutl's own words, as the host etcdutl says them.
  const damaged = Buffer.from(snapshot);
  damaged[damaged.length - 1]! ^= 1;
  writeFileSync(snapshotFile, damaged);
  const hostError = await run(binaries.etcdutl, [
    "snapshot",
    "restore",
    snapshotFile,
    `--data-dir=${path.join(work, "host-restore")}`,
  ]).then(
    () => assert.fail("the host etcdutl restored a damaged snapshot"),
    (err: { stdout: string; stderr: string }) =>
      `${err.stdout}${err.stderr}`
        .trim()
        .split("\n")
        .at(-1)
        ?.replace(/^Error: /, ""),
  );
  assert.match(hostError ?? "", /^expected sha256 \[[0-9 ]+\], got \[[0-9 ]+\]$/);
  assert.deepEqual(await node.upload("EtcdRecover", [damaged]), { messages: [{ metadata: null }] });
  assert.deepEqual(await node.call("Bootstrap", { recover_etcd: true }), { messages: [{ metadata: null }] });
  await node.until("Failed", false);
  assert.equal(
    node.supervisor.get("etcd")!.events.at(-1)!.msg,
    `Failed to run pre stage: error recovering from the snapshot: ${hostError}`,
  );
  assert.deepEqual(await client.listContainers(), []);
  // As with Talos, the failed restore leaves what it wrote: the data directory is wiped before the next try.
  assert.ok((await readdir(node.paths.dataDir)).includes("member"));
  await rm(node.paths.dataDir, { recursive: true, force: true });

  assert.deepEqual(await node.upload("EtcdRecover", [snapshot.subarray(0, 50_000), snapshot.subarray(50_000)]), {
    messages: [{ metadata: null }],
  });

  const lines: string[] = [];
  const untap = addLogTap((line) => lines.push(line));
  try {
    assert.deepEqual(await node.call("Bootstrap", { recover_etcd: true }), { messages: [{ metadata: null }] });
    await node.until("Running");
  } finally {
    untap();
  }
  const hash = (hostStatus.hash >>> 0).toString(16).padStart(8, "0");
  const recovering = `recovering etcd from snapshot: hash ${hash}, revision ${hostStatus.revision}, total keys ${hostStatus.totalKey}, total size ${hostStatus.totalSize}`;
  assert.ok(
    lines.some((l) => l.includes(recovering)),
    `${recovering}\n${lines.join("\n")}`,
  );

  const restored = await node.client();
  try {
    for (const [k, v] of keys) assert.deepEqual((await restored.get(k)).value, v, k);
    const members = (await restored.memberList()).members;
    assert.deepEqual(
      members.map((m) => [m.name, m.peerURLs]),
      [["cp-1", [`https://127.0.0.1:${node.ports.peer}`]]],
    );
  } finally {
    restored.close();
  }
  // Restored by etcdutl as root, handed to etcd's user; the snapshot consumed; the tasks leave nothing behind.
  assert.equal((await stat(path.join(node.paths.dataDir, "member", "snap", "db"))).uid, 60);
  await assert.rejects(stat(node.paths.recoverySnapshot), { code: "ENOENT" });
  assert.deepEqual(await client.listContainers(), []);
  assert.equal(await client.hasSnapshot("overlayfs", etcdutlTaskId), false);
  assert.deepEqual(await readdir(path.join(work, "etcdutl-output")), []);
  const images = await client.listImages();
  assert.ok(
    images.some((i) => i.name === image),
    JSON.stringify(images.map((i) => i.name)),
  );
  assert.ok(registry.tokenRequests.includes("repository:etcd-development/etcd:pull"), registry.tokenRequests.join(" "));
});
