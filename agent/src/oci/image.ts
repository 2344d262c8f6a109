// Building images: layers written as tar files (optionally gzipped), a config and a
// manifest per platform, and an index naming each manifest's platform. Every blob is
// a LayoutBlob, ready for a layout archive. Nothing carries a time, so a rebuild of
// the same inputs gives the same digests.

import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { describeFile } from "./client.js";
import { jsonBlob, type LayoutBlob } from "./layout.js";
import { MediaType, type Descriptor } from "./manifest.js";
import { writeTar, type TarInput } from "./tar.js";

/** The runtime half of an image config (image-spec config.config), in its own field names. */
export interface RuntimeConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  Env?: string[];
  WorkingDir?: string;
  ExposedPorts?: Record<string, Record<string, never>>;
  Labels?: Record<string, string>;
}

export interface BuiltLayer {
  blob: LayoutBlob;
  /** The digest of the uncompressed tar, as the config's rootfs.diff_ids names it. */
  diffId: string;
}

export interface PlatformImage {
  arch: string;
  layers: BuiltLayer[];
  config: RuntimeConfig;
}

/**
 * Writes `entries` as a layer at `file` (gzipped when `gzip`, the uncompressed tar
 * removed then). Returns the layer's blob and diff id.
 */
export async function buildLayer(file: string, entries: TarInput[], opts: { gzip: boolean }): Promise<BuiltLayer> {
  const tarFile = opts.gzip ? `${file}.tar` : file;
  await writeTar(tarFile, entries);
  const uncompressed = await describeFile(tarFile);
  if (!opts.gzip)
    return {
      blob: { descriptor: { mediaType: MediaType.ociLayer, ...uncompressed }, content: { file } },
      diffId: uncompressed.digest,
    };
  try {
    await pipeline(createReadStream(tarFile), createGzip({ level: 9 }), createWriteStream(file));
  } finally {
    await fs.rm(tarFile, { force: true });
  }
  return {
    blob: { descriptor: { mediaType: MediaType.ociLayerGzip, ...(await describeFile(file)) }, content: { file } },
    diffId: uncompressed.digest,
  };
}

export interface AssembledIndex {
  /** The index's own blob; its descriptor is what a tag names. */
  index: LayoutBlob;
  /** Every blob the index reaches: layers, configs, manifests and the index. */
  blobs: LayoutBlob[];
}

/** One linux manifest per platform under an OCI index. */
export function assembleIndex(platforms: PlatformImage[]): AssembledIndex {
  const blobs: LayoutBlob[] = [];
  const manifests: Descriptor[] = [];
  for (const p of platforms) {
    const config = jsonBlob(MediaType.ociConfig, {
      architecture: p.arch,
      os: "linux",
      config: p.config,
      rootfs: { type: "layers", diff_ids: p.layers.map((l) => l.diffId) },
    });
    const layers = p.layers.map((l) => l.blob.descriptor);
    const manifest = jsonBlob(
      MediaType.ociManifest,
      { schemaVersion: 2, mediaType: MediaType.ociManifest, config: config.descriptor, layers },
      { platform: { architecture: p.arch, os: "linux" } },
    );
    blobs.push(...p.layers.map((l) => l.blob), config, manifest);
    manifests.push(manifest.descriptor);
  }
  const index = jsonBlob(MediaType.ociIndex, { schemaVersion: 2, mediaType: MediaType.ociIndex, manifests });
  blobs.push(index);
  return { index, blobs };
}
