// ImagePull and ImageList through the sandbox's containerd (Debian's containerd and runc): an image
// pushed to Debian's docker-registry on loopback (TLS with our own CA) is pulled through the
// `.machine.registries` mirror of a registry name that does not resolve, with the CA from
// `.machine.registries.config`; an OCI image archive on the node is imported with `oci-archive:`;
// ImageList shows each with its digest and Talos's size (manifest + config + layers).
import assert from "node:assert/strict";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { parse, stringify } from "yaml";
import { NodeClient } from "../../agent/src/client/client.js";
import type { GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, freePort, stopProcess, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const skip = ["/usr/bin/containerd", "/usr/bin/runc", "/usr/bin/docker-registry"].every(existsSync)
  ? false
  : "containerd, runc or docker-registry is not installed (scripts/setup-deps.sh)";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-img-"));
const stateDir = path.join(work, "state");
let registry: ChildProcess;
let registryPort = 0;
let sandbox: SandboxProcess;
const clients: NodeClient[] = [];
let admin: NodeClient;
let ca: Buffer;

const sha256 = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

interface Blob {
  mediaType: string;
  bytes: Buffer;
}

/** A one-layer image of the hello binary: its layer, config and OCI manifest. */
function buildImage(tag: string): { layer: Blob; config: Blob; manifest: Blob; size: number } {
  const dir = path.join(work, `rootfs-${tag}`);
  mkdirSync(dir, { recursive: true });
  execFileSync("gcc", [
    "-static",
    "-O2",
    "-o",
    path.join(dir, "hello"),
    path.join(repo, "test/integration/helpers/hello-ext.c"),
  ]);
  writeFileSync(path.join(dir, "tag"), `${tag}\n`);
  const tar = execFileSync(
    "tar",
    ["--sort=name", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", dir, "-cf", "-", "hello", "tag"],
    { maxBuffer: 64 << 20 },
  );
  const gz = execFileSync("gzip", ["-n", "-c"], { input: tar, maxBuffer: 64 << 20 });
  const layer = { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", bytes: gz };
  const config = {
    mediaType: "application/vnd.oci.image.config.v1+json",
    bytes: Buffer.from(
      JSON.stringify({
        architecture: process.arch === "x64" ? "amd64" : process.arch,
        os: "linux",
        config: { Entrypoint: ["/hello"] },
        rootfs: { type: "layers", diff_ids: [sha256(tar)] },
      }),
    ),
  };
  const desc = (b: Blob) => ({ mediaType: b.mediaType, digest: sha256(b.bytes), size: b.bytes.length });
  const manifest = {
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    bytes: Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: desc(config),
        layers: [desc(layer)],
      }),
    ),
  };
  return { layer, config, manifest, size: manifest.bytes.length + config.bytes.length + layer.bytes.length };
}

function request(
  method: string,
  url: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      { method, ca, headers: { ...headers, ...(body ? { "content-length": String(body.length) } : {}) } },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Pushes an image with the registry HTTP API (monolithic blob uploads, then the manifest). */
async function push(repoName: string, tag: string, img: ReturnType<typeof buildImage>): Promise<void> {
  const base = `https://127.0.0.1:${registryPort}/v2/${repoName}`;
  for (const b of [img.layer, img.config]) {
    const started = await request("POST", `${base}/blobs/uploads/`);
    assert.equal(started.status, 202);
    const location = new URL(String(started.headers.location), base);
    location.searchParams.set("digest", sha256(b.bytes));
    assert.equal(
      (await request("PUT", location.href, b.bytes, { "content-type": "application/octet-stream" })).status,
      201,
    );
  }
  assert.equal(
    (await request("PUT", `${base}/manifests/${tag}`, img.manifest.bytes, { "content-type": img.manifest.mediaType }))
      .status,
    201,
  );
}

/** An OCI image layout tar naming the image `name`. */
function archive(name: string, img: ReturnType<typeof buildImage>): string {
  const dir = path.join(work, "layout");
  mkdirSync(path.join(dir, "blobs/sha256"), { recursive: true });
  for (const b of [img.layer, img.config, img.manifest])
    writeFileSync(path.join(dir, "blobs/sha256", sha256(b.bytes).slice(7)), b.bytes);
  writeFileSync(path.join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  const index = {
    schemaVersion: 2,
    manifests: [
      {
        mediaType: img.manifest.mediaType,
        digest: sha256(img.manifest.bytes),
        size: img.manifest.bytes.length,
        annotations: { "org.opencontainers.image.ref.name": name },
      },
    ],
  };
  writeFileSync(path.join(dir, "index.json"), JSON.stringify(index));
  const file = path.join(work, "offline.tar");
  execFileSync("tar", ["-C", dir, "-cf", file, "oci-layout", "index.json", "blobs"]);
  return file;
}

let pulled: ReturnType<typeof buildImage>;
let offline: ReturnType<typeof buildImage>;

before(async () => {
  if (skip) return;
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      path.join(work, "key.pem"),
      "-out",
      path.join(work, "crt.pem"),
    ],
    { stdio: "ignore" },
  );
  ca = readFileSync(path.join(work, "crt.pem"));
  registryPort = await freePort();
  writeFileSync(
    path.join(work, "registry.yml"),
    stringify({
      version: 0.1,
      storage: { filesystem: { rootdirectory: path.join(work, "registry") } },
      http: {
        addr: `127.0.0.1:${registryPort}`,
        tls: { certificate: path.join(work, "crt.pem"), key: path.join(work, "key.pem") },
      },
    }),
  );
  registry = spawn("/usr/bin/docker-registry", ["serve", path.join(work, "registry.yml")], { stdio: "ignore" });
  await eventually(async () =>
    assert.equal((await request("GET", `https://127.0.0.1:${registryPort}/v2/`)).status, 200),
  );
  pulled = buildImage("pulled");
  offline = buildImage("offline");
  await push("basalt/hello", "v1", pulled);

  const config = (generated: GeneratedConfigs) => {
    const docs = generated.controlplane.split(/^---\n/m);
    const machineConfig = parse(docs[0]!) as { machine: Record<string, unknown> };
    machineConfig.machine.registries = {
      mirrors: { "registry.basalt.test": { endpoints: [`https://127.0.0.1:${registryPort}`] } },
      config: { [`127.0.0.1:${registryPort}`]: { tls: { ca: ca.toString("base64") } } },
    };
    docs[0] = stringify(machineConfig);
    return docs.join("---\n");
  };
  ({ sandbox, admin } = await startConfiguredSandbox({
    clusterName: "img",
    stateDir,
    args: ["--apid-in-process", "--containerd", "/usr/bin/containerd"],
    config,
  }));
  clients.push(admin);
  await eventually(async () => {
    const list = (await admin.serviceList()) as { messages: { services: { id: string; state: string }[] }[] };
    assert.equal(list.messages[0]!.services.find((s) => s.id === "containerd")?.state, "Running");
  }, 300);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox?.stop();
  if (registry) await stopProcess(registry);
  rmSync(work, { recursive: true, force: true });
});

type ImageInfo = { name: string; digest: string; size: number; created_at?: { seconds: number } };
const NS_SYSTEM = 1;
const NS_CRI = 2;

async function imageList(namespace: number): Promise<ImageInfo[]> {
  const stream = admin.machine.ImageList({ namespace }, admin.metadata()) as grpc.ClientReadableStream<ImageInfo>;
  const out: ImageInfo[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

const code = (expected: grpc.status, details: RegExp) => (err: grpc.ServiceError) =>
  err.code === expected && details.test(err.details);

test("ImagePull through a registry mirror (TLS with the configured CA); ImageList shows it with its digest and size", {
  skip,
}, async () => {
  await admin.unary(admin.machine, "ImagePull", {
    namespace: NS_SYSTEM,
    reference: "registry.basalt.test/basalt/hello:v1",
  });
  const list = await imageList(NS_SYSTEM);
  assert.deepEqual(
    list.map((i) => [i.name, i.digest, i.size]),
    [["registry.basalt.test/basalt/hello:v1", sha256(pulled.manifest.bytes), pulled.size]],
  );
  assert.ok(list[0]!.created_at!.seconds > 0);
  // Pulled into system only.
  assert.deepEqual(await imageList(NS_CRI), []);
});

test("ImagePull into the cri namespace, by digest; bad references and unknown images are refused", {
  skip,
}, async () => {
  const ref = `registry.basalt.test/basalt/hello@${sha256(pulled.manifest.bytes)}`;
  await admin.unary(admin.machine, "ImagePull", { namespace: NS_CRI, reference: ref });
  assert.deepEqual(
    (await imageList(NS_CRI)).map((i) => [i.name, i.digest, i.size]),
    [[ref, sha256(pulled.manifest.bytes), pulled.size]],
  );
  await assert.rejects(
    admin.unary(admin.machine, "ImagePull", { namespace: NS_SYSTEM, reference: "Bad//Ref" }),
    code(grpc.status.INVALID_ARGUMENT, /invalid image reference/),
  );
  await assert.rejects(
    admin.unary(admin.machine, "ImagePull", {
      namespace: NS_SYSTEM,
      reference: "registry.basalt.test/basalt/nosuch:v1",
    }),
    code(grpc.status.NOT_FOUND, /not found/),
  );
  await assert.rejects(
    admin.unary(admin.machine, "ImagePull", { namespace: 0, reference: "x" }),
    code(grpc.status.INVALID_ARGUMENT, /invalid namespace NS_UNKNOWN/),
  );
});

test("an OCI image archive on the node is imported with ImagePull oci-archive:<path> and shows in ImageList", {
  skip,
}, async () => {
  const file = archive("registry.basalt.test/offline:v1", offline);
  await admin.unary(admin.machine, "ImagePull", { namespace: NS_SYSTEM, reference: `oci-archive:${file}` });
  const list = await imageList(NS_SYSTEM);
  assert.deepEqual(
    list.map((i) => [i.name, i.digest, i.size]),
    [
      ["registry.basalt.test/basalt/hello:v1", sha256(pulled.manifest.bytes), pulled.size],
      ["registry.basalt.test/offline:v1", sha256(offline.manifest.bytes), offline.size],
    ],
  );
  await assert.rejects(
    admin.unary(admin.machine, "ImagePull", {
      namespace: NS_SYSTEM,
      reference: `oci-archive:${path.join(work, "missing.tar")}`,
    }),
    code(grpc.status.NOT_FOUND, /not found/),
  );
});
