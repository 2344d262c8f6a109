import { createHash, randomUUID } from "node:crypto";
import { AlreadyExistsError, InvalidInputError, NotFoundError } from "../../errors.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { Descriptor } from "../../sys/containerd/types.js";

export const mediaTypes = {
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
} as const;

/** What the manifests endpoint of a registry is asked to answer with. */
export const manifestAccept = [
  mediaTypes.ociIndex,
  mediaTypes.ociManifest,
  mediaTypes.dockerList,
  mediaTypes.dockerManifest,
];

const isIndex = (t: string) => t === mediaTypes.ociIndex || t === mediaTypes.dockerList;
const isManifest = (t: string) => t === mediaTypes.ociManifest || t === mediaTypes.dockerManifest;

/** Where an image's blobs come from (a registry, an archive). */
export interface BlobSource {
  /** The blob's bytes; NotFoundError when the source does not have it. */
  open(desc: Descriptor): Promise<AsyncIterable<Buffer>>;
}

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

/** This node's platform, as containerd's platforms.Default() names it. */
export function nodePlatform(): Platform {
  const architecture = process.arch === "x64" ? "amd64" : process.arch;
  return { os: "linux", architecture, ...(architecture === "arm64" ? { variant: "v8" } : {}) };
}

function matches(p: Platform, d: { platform?: { os?: string; architecture?: string; variant?: string } }): boolean {
  if (!d.platform) return true;
  if (d.platform.os !== p.os || d.platform.architecture !== p.architecture) return false;
  // arm64 images name no variant, or v8 (containerd normalizes both to v8).
  return !p.variant || !d.platform.variant || d.platform.variant === p.variant;
}

interface ManifestJson {
  config: Descriptor;
  layers: Descriptor[];
}

interface IndexJson {
  manifests: (Descriptor & { mediaType?: string; platform?: Platform })[];
}

/** Our descriptors and the JSON's (mediaType, camelCase) side by side. */
function fromJson(
  d: { mediaType?: string; media_type?: string; digest: string; size: number },
  fallbackType = "",
): Descriptor {
  return { media_type: d.mediaType ?? d.media_type ?? fallbackType, digest: d.digest, size: d.size };
}

async function readAll(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of it) chunks.push(c);
  return Buffer.concat(chunks);
}

function verified(desc: Descriptor, bytes: Buffer): Buffer {
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  if (desc.digest !== digest) throw new InvalidInputError(`content ${desc.digest} has digest ${digest}`);
  return bytes;
}

/** The layers of the manifest chosen for `platform`, with the config's diff ids. */
export interface StoredImage {
  manifest: ManifestJson;
  diffIds: string[];
}

/**
 * Copies an image into containerd's content store, children before parents, labelling each parent
 * with containerd's GC references to its children (so they live as long as the image), then names
 * it. Only `platform`'s manifest of an index is copied, as containerd's client pulls. The caller
 * holds a lease on `client` so nothing is collected before the image refers to it.
 */
export async function storeImage(
  client: ContainerdClient,
  name: string,
  top: Descriptor,
  source: BlobSource,
  platform: Platform,
  topBytes?: Buffer,
): Promise<StoredImage> {
  let chosen: StoredImage | undefined;
  const write = async (desc: Descriptor, bytes: Buffer, labels: Record<string, string>) =>
    client.writeContent(desc.digest, desc.size, [bytes], labels);
  const storeManifest = async (desc: Descriptor, bytes: Buffer): Promise<StoredImage> => {
    const m = JSON.parse(bytes.toString("utf8")) as ManifestJson;
    const config = verified(m.config, await readAll(await source.open(fromJson(m.config))));
    const diffIds =
      (JSON.parse(config.toString("utf8")) as { rootfs?: { diff_ids?: string[] } }).rootfs?.diff_ids ?? [];
    const labels: Record<string, string> = { "containerd.io/gc.ref.content.config": m.config.digest };
    for (const [i, layer] of m.layers.entries()) {
      const ld = fromJson(layer);
      if (!(await client.hasContent(ld.digest))) await client.writeContent(ld.digest, ld.size, await source.open(ld));
      labels[`containerd.io/gc.ref.content.l.${i}`] = ld.digest;
    }
    const chain = chainIds(diffIds);
    await write(
      fromJson(m.config),
      config,
      chain.length ? { "containerd.io/gc.ref.snapshot.overlayfs": chain[chain.length - 1]! } : {},
    );
    await write(desc, bytes, labels);
    return { manifest: m, diffIds };
  };
  const bytes = verified(top, topBytes ?? (await readAll(await source.open(top))));
  if (isIndex(top.media_type)) {
    const index = JSON.parse(bytes.toString("utf8")) as IndexJson;
    const labels: Record<string, string> = {};
    for (const [i, m] of index.manifests.entries()) {
      if (!matches(platform, m)) continue;
      const md = fromJson(m, mediaTypes.ociManifest);
      if (!isManifest(md.media_type)) continue;
      const stored = await storeManifest(md, verified(md, await readAll(await source.open(md))));
      chosen ??= stored;
      labels[`containerd.io/gc.ref.content.m.${i}`] = md.digest;
    }
    if (!chosen) throw new NotFoundError(`image ${name} has no manifest for ${platform.os}/${platform.architecture}`);
    await write(top, bytes, labels);
  } else if (isManifest(top.media_type)) {
    chosen = await storeManifest(top, bytes);
  } else {
    throw new InvalidInputError(`image ${name}: unsupported media type ${top.media_type}`);
  }
  await client.putImage(name, top);
  return chosen;
}

/** containerd's chain ids of a stack of layers (the names of their committed snapshots). */
export function chainIds(diffIds: string[]): string[] {
  const out: string[] = [];
  for (const d of diffIds) {
    const prev = out[out.length - 1];
    out.push(prev === undefined ? d : `sha256:${createHash("sha256").update(`${prev} ${d}`).digest("hex")}`);
  }
  return out;
}

const SNAPSHOTTER = "overlayfs";

/** Unpacks the layers into overlayfs snapshots named by chain id (containerd's client unpacks so on pull). */
export async function unpack(client: ContainerdClient, image: StoredImage): Promise<void> {
  const chain = chainIds(image.diffIds);
  if (chain.length !== image.manifest.layers.length)
    throw new InvalidInputError(
      `the image config lists ${chain.length} layers, its manifest ${image.manifest.layers.length}`,
    );
  for (const [i, layer] of image.manifest.layers.entries()) {
    const id = chain[i]!;
    if (await client.hasSnapshot(SNAPSHOTTER, id)) continue;
    const key = `extract-${randomUUID()} ${id}`;
    const mounts = await client.prepareSnapshot(SNAPSHOTTER, key, i === 0 ? "" : chain[i - 1]!);
    try {
      await client.applyDiff(fromJson(layer), mounts);
      await client.commitSnapshot(SNAPSHOTTER, id, key);
    } catch (err) {
      await client.removeSnapshot(SNAPSHOTTER, key).catch(() => undefined);
      // Another unpack of the same layer (a replaced service's pull, CRI's) committed it first: it is there,
      // as containerd's own unpacker takes it.
      if (err instanceof AlreadyExistsError) continue;
      throw err;
    }
  }
}

/**
 * The size ImageList reports, as containerd's images.Size for this platform: every descriptor
 * reachable from the target through the platform's manifest (index, manifest, config, layers).
 */
export async function imageSize(client: ContainerdClient, target: Descriptor, platform: Platform): Promise<number> {
  let total = target.size;
  if (isIndex(target.media_type)) {
    const index = JSON.parse((await client.readContent(target.digest)).toString("utf8")) as IndexJson;
    for (const m of index.manifests)
      if (matches(platform, m) && isManifest(m.mediaType ?? ""))
        total += await imageSize(client, fromJson(m), platform);
  } else if (isManifest(target.media_type)) {
    const m = JSON.parse((await client.readContent(target.digest)).toString("utf8")) as ManifestJson;
    total += m.config.size + m.layers.reduce((sum, l) => sum + l.size, 0);
  }
  return total;
}

/** Runs `fn` with a client whose writes are held by a fresh lease, deleted afterwards (the image then holds them). */
export async function withLease<T>(client: ContainerdClient, fn: (leased: ContainerdClient) => Promise<T>): Promise<T> {
  const id = `basalt-${randomUUID()}`;
  await client.createLease(id, 3600);
  try {
    return await fn(client.withLease(id));
  } finally {
    await client.deleteLease(id).catch(() => undefined);
  }
}

/** What an image's config says about running it (OCI image config's `config`). */
export interface ImageRunConfig {
  env: string[];
  entrypoint: string[];
  cmd: string[];
  user: string;
  workingDir: string;
  /** The chain id of its top layer (the committed snapshot a container's snapshot is prepared from). */
  topChainId: string;
}

/** The run config and top chain id of a stored image, for `platform`'s manifest of an index. */
export async function imageRunConfig(
  client: ContainerdClient,
  target: Descriptor,
  platform: Platform,
): Promise<ImageRunConfig> {
  let desc = target;
  if (isIndex(desc.media_type)) {
    const index = JSON.parse((await client.readContent(desc.digest)).toString("utf8")) as IndexJson;
    const m = index.manifests.find((d) => matches(platform, d) && isManifest(d.mediaType ?? mediaTypes.ociManifest));
    if (!m)
      throw new NotFoundError(`image ${target.digest} has no manifest for ${platform.os}/${platform.architecture}`);
    desc = fromJson(m, mediaTypes.ociManifest);
  }
  if (!isManifest(desc.media_type)) throw new InvalidInputError(`unsupported media type ${desc.media_type}`);
  const manifest = JSON.parse((await client.readContent(desc.digest)).toString("utf8")) as ManifestJson;
  const config = JSON.parse((await client.readContent(manifest.config.digest)).toString("utf8")) as {
    config?: { Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; User?: string; WorkingDir?: string };
    rootfs?: { diff_ids?: string[] };
  };
  const chain = chainIds(config.rootfs?.diff_ids ?? []);
  if (chain.length === 0) throw new InvalidInputError(`image ${target.digest} has no layers`);
  const c = config.config ?? {};
  return {
    env: c.Env ?? [],
    entrypoint: c.Entrypoint ?? [],
    cmd: c.Cmd ?? [],
    user: c.User ?? "",
    workingDir: c.WorkingDir ?? "",
    topChainId: chain[chain.length - 1]!,
  };
}
