// The installer image: one uncompressed layer per architecture holding
// usr/install/<arch>/vmlinuz and initramfs.xz (where Talos's installer keeps its
// boot assets), under an index naming each manifest's platform.

import { promises as fs } from "node:fs";
import path from "node:path";
import { createGunzip } from "node:zlib";
import { createReadStream, createWriteStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { randomBytes } from "node:crypto";
import { describeError, InvalidInputError, NotFoundError } from "../errors.js";
import type { Logger } from "../log.js";
import { RepositoryClient } from "./client.js";
import { RegistryError } from "./errors.js";
import { registryEndpoints, type RegistriesConfig } from "./hosts.js";
import { assembleIndex, buildLayer, type PlatformImage } from "./image.js";
import { writeLayoutArchive } from "./layout.js";
import { selectPlatform, type ImageManifest } from "./manifest.js";
import { manifestReference, parseImageReference, formatImageReference } from "./reference.js";
import { listTar, memberStream } from "./tar.js";

export type InstallerArch = "amd64" | "arm64";

export interface InstallerPlatform {
  arch: InstallerArch;
  kernel: string;
  initramfs: string;
}

export const installerFiles = { kernel: "vmlinuz", initramfs: "initramfs.xz" } as const;

const copyChunkBytes = 4 * 1024 * 1024;

function installDir(arch: InstallerArch): string {
  return `usr/install/${arch}`;
}

/** Writes the installer archive for one or more architectures; `version` tags it. */
export async function buildInstallerArchive(
  out: string,
  version: string,
  platforms: InstallerPlatform[],
): Promise<void> {
  const images: PlatformImage[] = [];
  const scratch: string[] = [];
  try {
    for (const p of platforms) {
      const dir = installDir(p.arch);
      const layerFile = `${out}.${p.arch}.layer`;
      scratch.push(layerFile);
      const layer = await buildLayer(
        layerFile,
        [
          { name: "usr" },
          { name: "usr/install" },
          { name: dir },
          { name: `${dir}/${installerFiles.kernel}`, content: { file: p.kernel } },
          { name: `${dir}/${installerFiles.initramfs}`, content: { file: p.initramfs } },
        ],
        { gzip: false },
      );
      images.push({
        arch: p.arch,
        layers: [layer],
        config: { Labels: { "org.opencontainers.image.version": version } },
      });
    }
    const { index, blobs } = assembleIndex(images);
    await writeLayoutArchive(out, [{ top: index.descriptor, refName: version }], blobs);
  } finally {
    for (const f of scratch) await fs.rm(f, { force: true });
  }
}

export interface PulledInstaller {
  kernel: string;
  initramfs: string;
  /** The manifest digest the files came from. */
  digest: string;
}

export interface PullOptions {
  image: string;
  arch: InstallerArch;
  registries?: RegistriesConfig;
  /** Receives vmlinuz and initramfs.xz, each renamed into place only after its layer verified. */
  destDir: string;
  log: Logger;
}

/**
 * Pulls the installer's kernel and initramfs for one architecture, trying each
 * endpoint for the image's registry in turn (mirrors first, as configured).
 */
export async function pullInstaller(opts: PullOptions): Promise<PulledInstaller> {
  const ref = parseImageReference(opts.image);
  const failures: string[] = [];
  for (const endpoint of registryEndpoints(opts.registries, ref.host)) {
    const client = new RepositoryClient(endpoint, ref.repository);
    try {
      return await pullFrom(client, manifestReference(ref), opts);
    } catch (err) {
      if (err instanceof InvalidInputError) throw err;
      opts.log.warn("pulling the installer from an endpoint failed", {
        image: opts.image,
        endpoint: endpoint.base.href,
        error: describeError(err),
      });
      failures.push(`${endpoint.base.origin}: ${describeError(err)}`);
    }
  }
  throw new RegistryError(`pulling ${formatImageReference(ref)} failed: ${failures.join("; ")}`, { image: opts.image });
}

async function pullFrom(client: RepositoryClient, reference: string, opts: PullOptions): Promise<PulledInstaller> {
  let top = await client.manifest(reference);
  if (top.parsed.kind === "index") {
    const desc = selectPlatform(top.parsed, opts.arch);
    top = await client.manifest(desc.digest, desc);
  }
  const manifest = top.parsed as ImageManifest;
  await fs.mkdir(opts.destDir, { recursive: true });
  const dir = installDir(opts.arch);
  const wanted = new Map([
    [`${dir}/${installerFiles.kernel}`, installerFiles.kernel],
    [`${dir}/${installerFiles.initramfs}`, installerFiles.initramfs],
  ]);
  const found = new Set<string>();
  const token = randomBytes(6).toString("hex");
  // Where a pull's time goes (the download and its digest, or the copy of the members), for the log.
  const spent = { layerBytes: 0, downloadMs: 0, extractMs: 0 };
  for (const layer of manifest.layers) {
    const blob = path.join(opts.destDir, `.layer-${token}`);
    try {
      const started = performance.now();
      await client.blobToFile(layer, blob);
      const downloaded = performance.now();
      spent.layerBytes += layer.size;
      spent.downloadMs += Math.round(downloaded - started);
      const tarFile = layer.mediaType.endsWith("gzip") ? await gunzipTo(blob, `${blob}.tar`) : blob;
      for (const m of await listTar(tarFile)) {
        const name = wanted.get(m.name);
        if (!name || m.type !== "file") continue;
        // The layer's digest was verified above; its members are renamed into place whole.
        const tmp = path.join(opts.destDir, `.${name}-${token}`);
        // Large chunks: copying the ~84 MB in 64 KiB ones took 17 s inside a TCG guest (the cost is per chunk).
        await pipeline(
          memberStream(tarFile, m, copyChunkBytes),
          createWriteStream(tmp, { mode: 0o600, highWaterMark: copyChunkBytes }),
        );
        await fs.rename(tmp, path.join(opts.destDir, name));
        found.add(name);
      }
      spent.extractMs += Math.round(performance.now() - downloaded);
    } finally {
      await fs.rm(blob, { force: true });
      await fs.rm(`${blob}.tar`, { force: true });
    }
  }
  for (const name of Object.values(installerFiles)) {
    if (!found.has(name)) throw new NotFoundError(`the installer image has no ${dir}/${name}`, { digest: top.digest });
  }
  opts.log.info("installer pulled", { digest: top.digest, endpoint: client.endpoint.base.origin, ...spent });
  return {
    kernel: path.join(opts.destDir, installerFiles.kernel),
    initramfs: path.join(opts.destDir, installerFiles.initramfs),
    digest: top.digest,
  };
}

async function gunzipTo(from: string, to: string): Promise<string> {
  await pipeline(createReadStream(from), createGunzip(), createWriteStream(to, { mode: 0o600 }));
  return to;
}
