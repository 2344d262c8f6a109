// The OCI client against a real registry (Debian's docker-registry on loopback, HTTPS
// with token authentication): the installer archive is pushed, then pulled through a
// mirror entry as a node would; a blob altered in the registry's storage is refused.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { logger } from "../../agent/src/log.js";
import { RepositoryClient } from "../../agent/src/oci/client.js";
import { RegistryError } from "../../agent/src/oci/errors.js";
import { registryEndpoints, type RegistriesConfig } from "../../agent/src/oci/hosts.js";
import { buildInstallerArchive, pullInstaller } from "../../agent/src/oci/installer.js";
import { LayoutArchive } from "../../agent/src/oci/layout.js";
import { registryBinary, startRegistry, type TestRegistry } from "./helpers/registry.js";

const canRun = fs.existsSync(registryBinary);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-oci-"));
const log = logger("test");
let registry: TestRegistry;

const files = {
  amd64: { kernel: randomBytes(3 * 1024 * 1024 + 17), initramfs: randomBytes(5 * 1024 * 1024 + 3) },
  arm64: { kernel: randomBytes(2 * 1024 * 1024 + 5), initramfs: randomBytes(4 * 1024 * 1024 + 511) },
};

// The node names the installer by a registry name that only a mirror entry resolves, as users configure it.
const image = "installer.basalt.test/basalt/installer:v0.2.0";
function registries(): RegistriesConfig {
  return {
    mirrors: { "installer.basalt.test": { endpoints: [`https://${registry.host}`] } },
    config: {
      [registry.host]: { tls: { ca: registry.ca }, auth: { username: registry.username, password: registry.password } },
    },
  };
}

describe("OCI distribution client against docker-registry", {
  skip: !canRun && "docker-registry is not installed",
}, () => {
  before(async () => {
    registry = await startRegistry(path.join(work, "registry"));
    for (const [arch, f] of Object.entries(files)) {
      fs.writeFileSync(path.join(work, `vmlinuz-${arch}`), f.kernel);
      fs.writeFileSync(path.join(work, `initramfs-${arch}.xz`), f.initramfs);
    }
    await buildInstallerArchive(path.join(work, "installer.tar"), "v0.2.0", [
      { arch: "amd64", kernel: path.join(work, "vmlinuz-amd64"), initramfs: path.join(work, "initramfs-amd64.xz") },
      { arch: "arm64", kernel: path.join(work, "vmlinuz-arm64"), initramfs: path.join(work, "initramfs-arm64.xz") },
    ]);
  });
  after(async () => {
    await registry?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("pushes the multi-arch installer archive over HTTPS with a bearer token", async () => {
    const [endpoint] = registryEndpoints(registries(), registry.host);
    const archive = await LayoutArchive.open(path.join(work, "installer.tar"));
    const digest = await archive.push(new RepositoryClient(endpoint!, "basalt/installer"), "v0.2.0");
    assert.equal(digest, archive.images[0]!.digest);
    // docker-registry names the actions of its challenge in either order.
    const pushScope = registry.tokenRequests.find((s) =>
      /^repository:basalt\/installer:(pull,push|push,pull)$/.test(s),
    );
    assert.ok(pushScope, `token scopes: ${registry.tokenRequests.join(" ")}`);
    // The tag resolves to the index we pushed, byte for byte.
    const fetched = await new RepositoryClient(endpoint!, "basalt/installer").manifest("v0.2.0");
    assert.equal(fetched.digest, digest);
    assert.equal(fetched.parsed.kind, "index");
    assert.deepEqual(fetched.parsed.kind === "index" && fetched.parsed.manifests.map((m) => m.platform?.architecture), [
      "amd64",
      "arm64",
    ]);
  });

  for (const arch of ["amd64", "arm64"] as const) {
    it(`pulls the ${arch} kernel and initramfs through the mirror, identical to what was built`, async () => {
      const dest = path.join(work, `pull-${arch}`);
      const pulled = await pullInstaller({ image, arch, registries: registries(), destDir: dest, log });
      assert.ok(fs.readFileSync(pulled.kernel).equals(files[arch].kernel));
      assert.ok(fs.readFileSync(pulled.initramfs).equals(files[arch].initramfs));
      assert.deepEqual(fs.readdirSync(dest).sort(), ["initramfs.xz", "vmlinuz"]);
    });
  }

  it("without credentials the registry refuses and nothing is written", async () => {
    const dest = path.join(work, "pull-noauth");
    const cfg = registries();
    delete cfg.config![registry.host]!.auth;
    await assert.rejects(
      pullInstaller({ image, arch: "amd64", registries: cfg, destDir: dest, log }),
      (err: unknown) =>
        err instanceof RegistryError && /token request .* answered 401/.test(String((err as Error).message)),
    );
    assert.deepEqual(fs.existsSync(dest) ? fs.readdirSync(dest) : [], []);
  });

  it("refuses a layer whose stored bytes were altered, and writes neither file", async () => {
    const archive = await LayoutArchive.open(path.join(work, "installer.tar"));
    const index = JSON.parse((await archive.json(archive.images[0]!)).toString()) as {
      manifests: { digest: string; size: number; mediaType: string }[];
    };
    const amd64 = JSON.parse((await archive.json(index.manifests[0]!)).toString()) as { layers: { digest: string }[] };
    const hex = amd64.layers[0]!.digest.slice("sha256:".length);
    const data = path.join(registry.storage, "docker/registry/v2/blobs/sha256", hex.slice(0, 2), hex, "data");
    // Its bits inverted: writing a fixed byte would change nothing where the layer already holds it.
    const fd = fs.openSync(data, "r+");
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, 4096);
    fs.writeSync(fd, Buffer.from([byte[0]! ^ 0xff]), 0, 1, 4096);
    fs.closeSync(fd);
    const dest = path.join(work, "pull-tampered");
    await assert.rejects(
      pullInstaller({ image, arch: "amd64", registries: registries(), destDir: dest, log }),
      /content does not match its digest/,
    );
    assert.deepEqual(fs.readdirSync(dest), [], "no kernel, no initramfs, no partial blob left");
  });
});
