// OCI image index/manifest and their Docker v2 equivalents: parsed and checked
// field by field (image-spec v1.1), then a platform's manifest picked from an index.

import { InvalidInputError, NotFoundError } from "../errors.js";
import { checkDigest } from "./digest.js";

export const MediaType = {
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  ociConfig: "application/vnd.oci.image.config.v1+json",
  ociLayer: "application/vnd.oci.image.layer.v1.tar",
  ociLayerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
  dockerList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
  dockerLayerGzip: "application/vnd.docker.image.rootfs.diff.tar.gzip",
} as const;

/** What a registry is asked for when resolving a tag: any of the four. */
export const manifestAccept = [
  MediaType.ociIndex,
  MediaType.ociManifest,
  MediaType.dockerList,
  MediaType.dockerManifest,
].join(", ");

export interface Platform {
  architecture: string;
  os: string;
  variant?: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface ImageIndex {
  kind: "index";
  mediaType: string;
  manifests: Descriptor[];
}

export interface ImageManifest {
  kind: "manifest";
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseDescriptor(v: unknown, where: string): Descriptor {
  if (!isObject(v)) throw new InvalidInputError(`${where}: a descriptor must be an object`);
  const { mediaType, digest, size, platform, annotations } = v;
  if (typeof mediaType !== "string" || mediaType === "") throw new InvalidInputError(`${where}.mediaType: missing`);
  if (typeof digest !== "string") throw new InvalidInputError(`${where}.digest: missing`);
  checkDigest(digest);
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0)
    throw new InvalidInputError(`${where}.size: must be a non-negative integer`);
  const d: Descriptor = { mediaType, digest, size };
  if (platform !== undefined) {
    if (!isObject(platform) || typeof platform.architecture !== "string" || typeof platform.os !== "string")
      throw new InvalidInputError(`${where}.platform: needs architecture and os`);
    d.platform = {
      architecture: platform.architecture,
      os: platform.os,
      ...(typeof platform.variant === "string" ? { variant: platform.variant } : {}),
    };
  }
  if (isObject(annotations))
    d.annotations = Object.fromEntries(
      Object.entries(annotations).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
  return d;
}

/**
 * Parses a manifest or an index; `contentType` is the registry's Content-Type
 * header (the document's own mediaType wins when both are present and agree).
 */
export function parseManifest(body: Uint8Array, contentType?: string): ImageIndex | ImageManifest {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch (err) {
    throw new InvalidInputError("manifest is not JSON", {}, { cause: err });
  }
  if (!isObject(doc)) throw new InvalidInputError("manifest must be a JSON object");
  if (doc.schemaVersion !== 2)
    throw new InvalidInputError(`manifest schemaVersion ${String(doc.schemaVersion)} is not 2`);
  const declared = typeof doc.mediaType === "string" ? doc.mediaType : undefined;
  const header = contentType?.split(";")[0]?.trim();
  if (declared && header && header !== declared && header !== "application/json")
    throw new InvalidInputError(`manifest says ${declared} but was served as ${header}`);
  const mediaType = declared ?? header ?? (Array.isArray(doc.manifests) ? MediaType.ociIndex : MediaType.ociManifest);
  if (mediaType === MediaType.ociIndex || mediaType === MediaType.dockerList) {
    if (!Array.isArray(doc.manifests)) throw new InvalidInputError("index: manifests must be a list");
    return { kind: "index", mediaType, manifests: doc.manifests.map((m, i) => parseDescriptor(m, `manifests[${i}]`)) };
  }
  if (mediaType === MediaType.ociManifest || mediaType === MediaType.dockerManifest) {
    if (!Array.isArray(doc.layers)) throw new InvalidInputError("manifest: layers must be a list");
    return {
      kind: "manifest",
      mediaType,
      config: parseDescriptor(doc.config, "config"),
      layers: doc.layers.map((l, i) => parseDescriptor(l, `layers[${i}]`)),
    };
  }
  throw new InvalidInputError(`unsupported manifest media type ${mediaType}`);
}

/** Go's names for Node's architectures, as OCI platforms use them. */
export function ociArchitecture(nodeArch: string): string {
  return nodeArch === "x64" ? "amd64" : nodeArch;
}

/** The linux manifest of an index for one architecture. */
export function selectPlatform(index: ImageIndex, architecture: string): Descriptor {
  const found = index.manifests.find((m) => m.platform?.os === "linux" && m.platform.architecture === architecture);
  if (!found) {
    const have = index.manifests
      .map((m) => (m.platform ? `${m.platform.os}/${m.platform.architecture}` : "unknown"))
      .join(", ");
    throw new NotFoundError(`the image has no linux/${architecture} manifest (it has: ${have || "none"})`, {
      architecture,
    });
  }
  return found;
}
