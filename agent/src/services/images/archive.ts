import { open } from "node:fs/promises";
import { InvalidInputError, NotFoundError } from "../../errors.js";
import { logger } from "../../log.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { parseReference } from "./reference.js";
import { mediaTypes, nodePlatform, storeImage, unpack, withLease, type BlobSource } from "./store.js";
import { tarEntries } from "./tar.js";

const log = logger("images");

/** The ImagePull reference prefix that imports an OCI image archive from a path on the node instead. */
export const ARCHIVE_PREFIX = "oci-archive:";

interface IndexEntry {
  mediaType?: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/**
 * Imports every image an OCI image layout archive (a tar with index.json and blobs/) names, for
 * sites without a registry: each index.json entry becomes an image named by its
 * `io.containerd.image.name` or `org.opencontainers.image.ref.name` annotation, unpacked for this
 * node's platform. Resolves with the names.
 */
export async function importArchive(client: ContainerdClient, file: string): Promise<string[]> {
  const fh = await open(file, "r").catch((err: NodeJS.ErrnoException) => {
    throw err.code === "ENOENT" ? new NotFoundError(`image archive ${file} not found`, { file }, { cause: err }) : err;
  });
  try {
    const entries = await tarEntries(fh);
    const read = async (name: string): Promise<Buffer> => {
      const e = entries.get(name);
      if (!e) throw new NotFoundError(`${name} is not in the archive ${file}`);
      const buf = Buffer.alloc(e.size);
      await fh.read(buf, 0, e.size, e.offset);
      return buf;
    };
    if (!entries.has("index.json"))
      throw new InvalidInputError(`${file} is not an OCI image archive: it has no index.json`);
    const index = JSON.parse((await read("index.json")).toString("utf8")) as { manifests?: IndexEntry[] };
    const source: BlobSource = {
      open: async (d) => {
        const [alg, hex] = d.digest.split(":");
        const e = entries.get(`blobs/${alg}/${hex}`);
        if (!e) throw new NotFoundError(`blob ${d.digest} is not in the archive ${file}`);
        return fh.createReadStream({ start: e.offset, end: e.offset + e.size - 1, autoClose: false });
      },
    };
    const names: string[] = [];
    for (const m of index.manifests ?? []) {
      const annotated =
        m.annotations?.["io.containerd.image.name"] ?? m.annotations?.["org.opencontainers.image.ref.name"];
      if (!annotated)
        throw new InvalidInputError(
          `${file}: index.json entry ${m.digest} names no image (annotation org.opencontainers.image.ref.name)`,
        );
      const name = parseReference(annotated).name;
      const top = { media_type: m.mediaType ?? mediaTypes.ociManifest, digest: m.digest, size: m.size };
      await withLease(client, async (leased) =>
        unpack(leased, await storeImage(leased, name, top, source, nodePlatform())),
      );
      log.info("image imported", { image: name, digest: m.digest, namespace: client.namespace, archive: file });
      names.push(name);
    }
    if (names.length === 0) throw new InvalidInputError(`${file}: index.json lists no images`);
    return names;
  } finally {
    await fh.close();
  }
}
