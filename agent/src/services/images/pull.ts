import { createHash } from "node:crypto";
import { describeError, NotFoundError } from "../../errors.js";
import { logger } from "../../log.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { Descriptor } from "../../sys/containerd/types.js";
import { parseReference } from "./reference.js";
import { RegistryClient, registryEndpoints, type Registries } from "./registry.js";
import { manifestAccept, mediaTypes, nodePlatform, storeImage, unpack, withLease, type BlobSource } from "./store.js";

const log = logger("images");

async function readAll(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of it) chunks.push(c);
  return Buffer.concat(chunks);
}

const manifestTypes: ReadonlySet<string> = new Set(manifestAccept);

/**
 * Pulls `reference` into `client`'s namespace and unpacks it for this node's platform, trying the
 * registry's endpoints (its mirrors) in order; an image of that name already present is kept as is
 * (Talos pulls with WithSkipIfAlreadyPulled). Resolves with the image's name.
 */
export async function pullImage(
  client: ContainerdClient,
  reference: string,
  registries: Registries | undefined,
): Promise<string> {
  const ref = parseReference(reference);
  if (
    await client.getImage(ref.name).then(
      () => true,
      (err: unknown) => (err instanceof NotFoundError ? false : Promise.reject(err)),
    )
  )
    return ref.name;
  let last: unknown;
  for (const endpoint of registryEndpoints(registries, ref.domain)) {
    const registry = new RegistryClient(endpoint, ref.path);
    try {
      const res = await registry.fetch("manifests", ref.digest ?? ref.tag!, manifestAccept);
      const bytes = await readAll(res.body);
      const declared = (JSON.parse(bytes.toString("utf8")) as { mediaType?: string }).mediaType;
      const contentType = (res.headers["content-type"] ?? "").split(";")[0]!.trim();
      const top: Descriptor = {
        media_type: manifestTypes.has(contentType) ? contentType : (declared ?? mediaTypes.ociManifest),
        digest: ref.digest ?? `sha256:${createHash("sha256").update(bytes).digest("hex")}`,
        size: bytes.length,
      };
      const source: BlobSource = {
        open: async (d) =>
          (await registry.fetch(manifestTypes.has(d.media_type) ? "manifests" : "blobs", d.digest, manifestAccept))
            .body,
      };
      await withLease(client, async (leased) =>
        unpack(leased, await storeImage(leased, ref.name, top, source, nodePlatform(), bytes)),
      );
      log.info("image pulled", {
        image: ref.name,
        digest: top.digest,
        namespace: client.namespace,
        endpoint: endpoint.base.href,
      });
      return ref.name;
    } catch (err) {
      log.warn("pulling from an endpoint failed", {
        image: ref.name,
        endpoint: endpoint.base.href,
        error: describeError(err),
      });
      last = err;
    }
  }
  throw last;
}
