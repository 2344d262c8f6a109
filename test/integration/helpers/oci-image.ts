// Tiny one-layer OCI images for tests, built from files on the host and pushed to a test registry
// through our OCI client (which answers the registry's token challenge).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, copyFileSync } from "node:fs";
import path from "node:path";
import { RepositoryClient } from "../../../agent/src/oci/client.js";
import { registryEndpoints } from "../../../agent/src/oci/hosts.js";
import type { TestRegistry } from "./registry.js";

const sha256 = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

export interface Blob {
  mediaType: string;
  bytes: Buffer;
}

export interface TestImage {
  layer: Blob;
  config: Blob;
  manifest: Blob;
  /** The config's digest: the image id CRI reports. */
  id: string;
  /** The manifest's digest. */
  digest: string;
}

/** An image whose one layer holds `files` (path in the image root → file on the host; parents implied), with `config` as its run config. */
export function buildImage(
  work: string,
  files: Record<string, string>,
  config: { Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; User?: string },
): TestImage {
  const dir = path.join(work, `rootfs-${Math.random().toString(36).slice(2)}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, from] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    copyFileSync(from, path.join(dir, name));
  }
  const tar = execFileSync(
    "tar",
    [
      "--sort=name",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--mtime=@0",
      "-C",
      dir,
      "-cf",
      "-",
      ...Object.keys(files),
    ],
    { maxBuffer: 64 << 20 },
  );
  const gz = execFileSync("gzip", ["-n", "-c"], { input: tar, maxBuffer: 64 << 20 });
  const layer = { mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", bytes: gz };
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const cfg = {
    mediaType: "application/vnd.oci.image.config.v1+json",
    bytes: Buffer.from(
      JSON.stringify({ architecture: arch, os: "linux", config, rootfs: { type: "layers", diff_ids: [sha256(tar)] } }),
    ),
  };
  const desc = (b: Blob) => ({ mediaType: b.mediaType, digest: sha256(b.bytes), size: b.bytes.length });
  const manifest = {
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    bytes: Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: desc(cfg),
        layers: [desc(layer)],
      }),
    ),
  };
  return { layer, config: cfg, manifest, id: sha256(cfg.bytes), digest: sha256(manifest.bytes) };
}

/** Pushes `img` as `repository:tag` to the test registry (HTTPS with its CA, token authentication). */
export async function pushImage(
  registry: TestRegistry,
  repository: string,
  tag: string,
  img: TestImage,
): Promise<void> {
  const [endpoint] = registryEndpoints(
    {
      config: {
        [registry.host]: {
          tls: { ca: registry.ca },
          auth: { username: registry.username, password: registry.password },
        },
      },
    },
    registry.host,
  );
  const client = new RepositoryClient(endpoint!, repository);
  for (const b of [img.layer, img.config])
    await client.pushBlob({ digest: sha256(b.bytes), size: b.bytes.length }, b.bytes);
  await client.pushManifest(tag, img.manifest.mediaType, img.manifest.bytes);
}
