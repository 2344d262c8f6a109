// The agent as the image ships it (one esbuild bundle, scripts/bundle.mjs) speaks HTTP and HTTPS:
// its `ctl installer build|push` writes an installer archive and pushes it to Debian's docker-registry,
// in plain HTTP and in HTTPS with token authentication, and what the registry then serves is pulled
// back byte for byte by the compiled (unbundled) client. The bundle once resolved node:http to its own
// wrapper, so every pull inside a node failed ("request is not a function") while these modules' own
// tests, which run unbundled, passed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { logger } from "../../agent/src/log.js";
import { pullInstaller } from "../../agent/src/oci/installer.js";
import { registryBinary, startRegistry, type TestRegistry } from "./helpers/registry.js";

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, "..", "..", "..");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-bundle-registry-"));
const bundle = path.join(work, "bundle", "basalt.mjs");
const kernel = randomBytes(1024 * 1024 + 7);
const initramfs = randomBytes(2 * 1024 * 1024 + 13);
const log = logger("test");

async function ctl(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [bundle, "ctl", ...args], { cwd: work });
  return stdout.trim();
}

describe("the bundled agent pushes to a registry over HTTP and HTTPS", {
  skip: !fs.existsSync(registryBinary) && "docker-registry is not installed",
}, () => {
  const registries: TestRegistry[] = [];
  before(async () => {
    await run(process.execPath, [path.join(repo, "scripts", "bundle.mjs"), path.join(work, "bundle")], { cwd: repo });
    fs.writeFileSync(path.join(work, "vmlinuz"), kernel);
    fs.writeFileSync(path.join(work, "initramfs.xz"), initramfs);
    await ctl(
      "installer",
      "build",
      "--output",
      "installer.tar",
      "--version",
      "v-bundle",
      "--platform",
      "amd64=vmlinuz,initramfs.xz",
    );
  });
  after(async () => {
    await Promise.all(registries.map((r) => r.stop()));
    fs.rmSync(work, { recursive: true, force: true });
  });

  const expectPulled = async (
    image: string,
    registriesConfig: Parameters<typeof pullInstaller>[0]["registries"],
    dest: string,
  ) => {
    const pulled = await pullInstaller({
      image,
      arch: "amd64",
      registries: registriesConfig,
      destDir: path.join(work, dest),
      log,
    });
    assert.ok(fs.readFileSync(pulled.kernel).equals(kernel));
    assert.ok(fs.readFileSync(pulled.initramfs).equals(initramfs));
  };

  it("plain HTTP (--insecure)", async () => {
    const registry = await startRegistry(path.join(work, "plain"), { plain: true });
    registries.push(registry);
    const image = `${registry.host}/basalt/installer:plain`;
    assert.match(
      await ctl("installer", "push", "installer.tar", image, "--insecure"),
      new RegExp(`^${image}@sha256:[0-9a-f]{64}$`),
    );
    await expectPulled(
      image,
      { mirrors: { [registry.host]: { endpoints: [`http://${registry.host}`] } } },
      "pull-plain",
    );
  });

  it("HTTPS with the registry's CA and a bearer token", async () => {
    const registry = await startRegistry(path.join(work, "tls"));
    registries.push(registry);
    fs.writeFileSync(path.join(work, "ca.crt"), registry.ca);
    const image = `${registry.host}/basalt/installer:tls`;
    const pushed = await ctl(
      "installer",
      "push",
      "installer.tar",
      image,
      "--ca",
      "ca.crt",
      "--username",
      registry.username,
      "--password",
      registry.password,
    );
    assert.match(pushed, new RegExp(`^${image}@sha256:[0-9a-f]{64}$`));
    await expectPulled(
      image,
      {
        config: {
          [registry.host]: {
            tls: { ca: registry.ca },
            auth: { username: registry.username, password: registry.password },
          },
        },
      },
      "pull-tls",
    );
  });
});
