// OCI image layout archives (image-spec "image-layout", tarred as skopeo's
// oci-archive: oci-layout, index.json, blobs/sha256/<hex>): written by the image
// build for the installer, read to push it to a registry.

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError, NotFoundError } from "../errors.js";
import type { RepositoryClient } from "./client.js";
import { checkDigest, sha256Digest, verifyBytes } from "./digest.js";
import { MediaType, parseManifest, type Descriptor } from "./manifest.js";
import { listTar, memberStream, readMember, writeTar, type TarInput, type TarMember } from "./tar.js";

export const refNameAnnotation = "org.opencontainers.image.ref.name";

export interface LayoutBlob {
  descriptor: Descriptor;
  content: Buffer | { file: string };
}

export interface LayoutImage {
  top: Descriptor;
  /** The image's name in index.json (org.opencontainers.image.ref.name). */
  refName: string;
}

/** Writes an archive whose index.json names each image, holding `blobs` (each blob once, whoever shares it). */
export async function writeLayoutArchive(out: string, images: LayoutImage[], blobs: LayoutBlob[]): Promise<void> {
  const index = {
    schemaVersion: 2,
    mediaType: MediaType.ociIndex,
    manifests: images.map(({ top, refName }) => ({
      ...top,
      annotations: { ...top.annotations, [refNameAnnotation]: refName },
    })),
  };
  const seen = new Set<string>();
  const entries: TarInput[] = [{ name: "blobs" }, { name: "blobs/sha256" }];
  for (const b of blobs) {
    if (seen.has(b.descriptor.digest)) continue;
    seen.add(b.descriptor.digest);
    entries.push({ name: `blobs/sha256/${checkDigest(b.descriptor.digest)}`, content: b.content });
  }
  entries.push({ name: "oci-layout", content: Buffer.from(JSON.stringify({ imageLayoutVersion: "1.0.0" })) });
  entries.push({ name: "index.json", content: Buffer.from(JSON.stringify(index)) });
  const tmp = `${out}.tmp`;
  await writeTar(tmp, entries);
  await fs.rename(tmp, out);
}

/** A JSON document as a blob and its descriptor. */
export function jsonBlob(
  mediaType: string,
  doc: unknown,
  extra: Partial<Descriptor> = {},
): LayoutBlob & { body: Buffer } {
  const body = Buffer.from(JSON.stringify(doc));
  return { descriptor: { mediaType, digest: sha256Digest(body), size: body.length, ...extra }, content: body, body };
}

export class LayoutArchive {
  private constructor(
    readonly file: string,
    private readonly members: Map<string, TarMember>,
    /** index.json's entries. */
    readonly images: Descriptor[],
  ) {}

  static async open(file: string): Promise<LayoutArchive> {
    const members = new Map((await listTar(file)).map((m) => [m.name, m]));
    const layout = members.get("oci-layout");
    const index = members.get("index.json");
    if (!layout || !index)
      throw new InvalidInputError(
        `${path.basename(file)} is not an OCI image layout archive (no oci-layout or index.json)`,
        { file },
      );
    const parsed = parseManifest(await readMember(file, index), MediaType.ociIndex);
    if (parsed.kind !== "index") throw new InvalidInputError(`${file}: index.json is not an index`, { file });
    return new LayoutArchive(file, members, parsed.manifests);
  }

  private member(digest: string): TarMember {
    const m = this.members.get(`blobs/sha256/${checkDigest(digest)}`);
    if (!m) throw new NotFoundError(`${path.basename(this.file)} has no blob ${digest}`, { file: this.file, digest });
    return m;
  }

  /** A small blob (a manifest or config), verified. */
  async json(desc: Descriptor): Promise<Buffer> {
    const body = await readMember(this.file, this.member(desc.digest));
    verifyBytes(body, desc.digest, desc.size);
    return body;
  }

  /** Pushes the image named `refName` (or the only one) and tags it `tag`; returns the top digest. */
  async push(client: RepositoryClient, tag: string, refName?: string): Promise<string> {
    const top = refName
      ? this.images.find((d) => d.annotations?.[refNameAnnotation] === refName)
      : this.images.length === 1
        ? this.images[0]
        : undefined;
    if (!top)
      throw new NotFoundError(
        `${path.basename(this.file)}: ${refName ? `no image named ${refName}` : "more than one image; name one"}`,
        { file: this.file },
      );
    await this.pushTree(client, top, tag);
    return top.digest;
  }

  private async pushTree(client: RepositoryClient, desc: Descriptor, reference: string): Promise<void> {
    const body = await this.json(desc);
    const doc = parseManifest(body, desc.mediaType);
    if (doc.kind === "index") {
      for (const child of doc.manifests) await this.pushTree(client, child, child.digest);
    } else {
      for (const blob of [doc.config, ...doc.layers]) {
        const m = this.member(blob.digest);
        if (m.size !== blob.size)
          throw new InvalidInputError(
            `${path.basename(this.file)}: blob ${blob.digest} has ${m.size} bytes, its descriptor says ${blob.size}`,
            { digest: blob.digest },
          );
        await client.pushBlob(blob, () => memberStream(this.file, m));
      }
    }
    await client.pushManifest(reference, doc.mediaType, body);
  }
}
