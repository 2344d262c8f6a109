// `npm run k8s-images` for a cheap subset (etcd and pause, amd64) against Debian's
// docker-registry on loopback (plain HTTP, as an air-gapped site's mirror is often run):
// the script builds the programs (Go's cache makes etcd quick when warm; cold works too),
// assembles the images and pushes them; each is read back with our OCI client and checked
// against the archive it was pushed from and the binary it was built from.
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { RepositoryClient } from "../../agent/src/oci/client.js";
import { registryEndpoints } from "../../agent/src/oci/hosts.js";
import { LayoutArchive, refNameAnnotation } from "../../agent/src/oci/layout.js";
import { MediaType, type Descriptor } from "../../agent/src/oci/manifest.js";
import { listTar, readMember } from "../../agent/src/oci/tar.js";
import { registryBinary, startRegistry, type TestRegistry } from "./helpers/registry.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const hasGo = (process.env.PATH ?? "").split(":").some((dir) => dir !== "" && fs.existsSync(path.join(dir, "go")));
const canRun = fs.existsSync(registryBinary) && hasGo;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-k8s-images-"));
let registry: TestRegistry;
let scriptOutput = "";
const run = promisify(execFile);
const canRunContainers =
  fs.existsSync("/usr/bin/containerd") && fs.existsSync("/usr/bin/ctr") && fs.existsSync("/usr/bin/runc");

const sha256 = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

const expected = {
  etcd: {
    reference: "gcr.io/etcd-development/etcd:v3.5.13",
    repository: "etcd-development/etcd",
    tag: "v3.5.13",
    // etcdutl beside etcd, as upstream's image has it.
    binaries: { "usr/local/bin/etcd": "etcd", "usr/local/bin/etcdutl": "etcdutl" },
    config: { Cmd: ["/usr/local/bin/etcd"], WorkingDir: "/var/lib/etcd/" },
  },
  pause: {
    reference: "registry.k8s.io/pause:3.8",
    repository: "pause",
    tag: "3.8",
    binaries: { pause: "pause" },
    config: { Entrypoint: ["/pause"], User: "65535:65535" },
  },
} as const;

function client(repository: string): RepositoryClient {
  const [endpoint] = registryEndpoints(
    { mirrors: { [registry.host]: { endpoints: [`http://${registry.host}`] } } },
    registry.host,
  );
  return new RepositoryClient(endpoint!, repository);
}

async function blob(c: RepositoryClient, desc: Descriptor): Promise<Buffer> {
  const file = path.join(work, desc.digest.slice(7));
  await c.blobToFile(desc, file);
  return fs.readFileSync(file);
}

describe("npm run k8s-images against docker-registry", {
  skip: !canRun && "docker-registry or Go is not installed",
}, () => {
  before(
    async () => {
      registry = await startRegistry(path.join(work, "registry"), { plain: true });
      const script = await run(
        "bash",
        ["scripts/k8s-images.sh", "--push", registry.host, "--arch", "amd64", "--only", "etcd,pause", "--insecure"],
        {
          cwd: repo,
          maxBuffer: 64 * 1024 * 1024,
        },
      );
      scriptOutput = script.stdout;
    },
    { timeout: 60 * 60 * 1000 },
  );
  after(async () => {
    await registry?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  for (const [name, want] of Object.entries(expected)) {
    it(`pushes ${want.reference} to the registry as ${want.repository}:${want.tag}, the index the archive holds`, async () => {
      const layout = await LayoutArchive.open(path.join(repo, "_out/k8s/images.tar"));
      const top = layout.images.find((d) => d.annotations?.[refNameAnnotation] === want.reference);
      assert.ok(top, `the archive names ${want.reference}`);
      const c = client(want.repository);
      const index = await c.manifest(want.tag);
      assert.equal(index.digest, top.digest);
      assert.equal(index.mediaType, MediaType.ociIndex);
      assert.match(scriptOutput, new RegExp(`${registry.host}/${want.repository}:${want.tag}@${index.digest}`));
      assert.ok(index.parsed.kind === "index");
      assert.deepEqual(
        index.parsed.manifests.map((m) => m.platform),
        [{ architecture: "amd64", os: "linux" }],
      );
    });

    it(`${name}'s amd64 manifest names its config and layers by digest, and its layer holds exactly its binaries, byte for byte`, async () => {
      const c = client(want.repository);
      const index = await c.manifest(want.tag);
      assert.ok(index.parsed.kind === "index");
      const desc = index.parsed.manifests[0]!;
      // Fetched by digest: the client verifies the body against it.
      const manifest = await c.manifest(desc.digest, desc);
      assert.equal(manifest.digest, desc.digest);
      assert.ok(manifest.parsed.kind === "manifest");
      const config = JSON.parse((await blob(c, manifest.parsed.config)).toString("utf8"));
      assert.equal(config.architecture, "amd64");
      assert.equal(config.os, "linux");
      for (const [k, v] of Object.entries(want.config)) assert.deepEqual(config.config[k], v, k);
      assert.equal(config.rootfs.diff_ids.length, manifest.parsed.layers.length);
      const last = manifest.parsed.layers.at(-1)!;
      assert.equal(last.mediaType, MediaType.ociLayerGzip);
      const tar = gunzipSync(await blob(c, last));
      assert.equal(sha256(tar), config.rootfs.diff_ids.at(-1));
      const tarFile = path.join(work, `${name}.layer.tar`);
      fs.writeFileSync(tarFile, tar);
      const files = (await listTar(tarFile)).filter((m) => m.type === "file");
      assert.deepEqual(
        files.map((m) => [m.name, m.mode]),
        Object.keys(want.binaries).map((b) => [b, 0o755]),
      );
      for (const [member, input] of Object.entries(want.binaries)) {
        const file = files.find((m) => m.name === member)!;
        assert.ok(
          (await readMember(tarFile, file)).equals(fs.readFileSync(path.join(repo, "_out/k8s/amd64", input))),
          member,
        );
      }
    });
  }

  describe("in real containerd", { skip: !canRunContainers && "containerd, ctr or runc is not installed" }, () => {
    const dir = path.join(work, "containerd");
    const sock = path.join(dir, "containerd.sock");
    let containerd: ChildProcess;
    const ctr = (...args: string[]) => run("ctr", ["--address", sock, ...args], { maxBuffer: 16 * 1024 * 1024 });

    before(async () => {
      fs.mkdirSync(dir, { recursive: true });
      const config = path.join(dir, "config.toml");
      fs.writeFileSync(
        config,
        [
          "version = 2",
          `root = "${dir}/root"`,
          `state = "${dir}/state"`,
          'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
          "[grpc]",
          `  address = "${sock}"`,
          "",
        ].join("\n"),
      );
      containerd = spawn("/usr/bin/containerd", ["--config", config], { stdio: "ignore" });
      // Ready when it answers on its socket; bounded, so a containerd that never comes up fails the suite.
      for (let i = 0; ; i++) {
        const up = await ctr("version").then(
          () => true,
          () => false,
        );
        if (up) break;
        if (i === 100) throw new Error("containerd did not answer on its socket in 20 s");
        await sleep(200);
      }
    });
    after(async () => {
      if (!containerd || containerd.exitCode !== null) return;
      const exited = new Promise((resolve) => containerd.once("exit", resolve));
      containerd.kill();
      await exited;
    });

    it("pulls the pushed etcd image over plain HTTP and runs /usr/local/bin/etcd and /usr/local/bin/etcdutl from it", async () => {
      const image = `${registry.host}/${expected.etcd.repository}:${expected.etcd.tag}`;
      await ctr("image", "pull", "--plain-http", image);
      const { stdout } = await ctr("run", "--rm", image, "basalt-etcd-version", "/usr/local/bin/etcd", "--version");
      assert.match(stdout, /^etcd Version: 3\.5\.13$/m);
      const etcdutl = await ctr("run", "--rm", image, "basalt-etcdutl-version", "/usr/local/bin/etcdutl", "version");
      assert.equal(etcdutl.stdout, "etcdutl version: 3.5.13\nAPI version: 3.5\n");
    });

    it("pulls the pushed pause image and runs /pause from it", async () => {
      const image = `${registry.host}/${expected.pause.repository}:${expected.pause.tag}`;
      await ctr("image", "pull", "--plain-http", image);
      const { stdout } = await ctr("run", "--rm", image, "basalt-pause-version", "/pause", "-v");
      assert.equal(stdout.trim(), "pause 3.8");
    });
  });
});
