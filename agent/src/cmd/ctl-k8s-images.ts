// `basalt ctl k8s-images build|push`: the Kubernetes images of an air-gapped site, written
// to one OCI layout archive (each image named by the reference Talos pulls), then pushed to a
// registry under the same repository paths, so a node's registry mirrors for registry.k8s.io,
// gcr.io and ghcr.io pointing at it serve them. scripts/k8s-images.sh builds the inputs.

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors.js";
import { parseFlags, type FlagValue } from "../flags.js";
import { RepositoryClient } from "../oci/client.js";
import { buildKubernetesImages, imageArchs, selectImages, type ImageArch } from "../oci/k8s-images.js";
import { LayoutArchive, refNameAnnotation, writeLayoutArchive } from "../oci/layout.js";
import { parseImageReference } from "../oci/reference.js";
import type { CtlIO } from "./ctl-gen.js";
import { registryEndpointFor } from "./ctl-installer.js";

function archsOf(value: FlagValue | undefined): ImageArch[] {
  const archs = Array.isArray(value) ? value : ["amd64"];
  const bad = archs.filter((a) => !imageArchs.includes(a as ImageArch));
  if (bad.length > 0 || archs.length === 0)
    throw new InvalidInputError(`--arch ${archs.join(",")}: each must be one of ${imageArchs.join(", ")}`);
  // Checked against imageArchs just above.
  return archs as ImageArch[];
}

/** k8s-images build --inputs DIR --output F [--arch amd64,arm64] [--only etcd,pause] */
export async function k8sImagesBuild(argv: string[], io: CtlIO): Promise<void> {
  const { flags } = parseFlags(argv, { inputs: "string", output: "string", arch: "list", only: "list" });
  if (typeof flags.inputs !== "string" || typeof flags.output !== "string")
    throw new InvalidInputError("k8s-images build needs --inputs DIR and --output FILE");
  const archs = archsOf(flags.arch);
  const images = selectImages(Array.isArray(flags.only) ? flags.only : []);
  const out = path.resolve(io.cwd(), flags.output);
  const work = `${out}.work`;
  try {
    const built = await buildKubernetesImages(path.resolve(io.cwd(), flags.inputs), work, images, archs);
    await writeLayoutArchive(out, built.images, built.blobs);
    const sizes = new Map(built.blobs.map((b) => [b.descriptor.digest, b.descriptor.size]));
    for (const image of built.images) io.out(`${image.refName}@${image.top.digest} (${archs.join(", ")})`);
    const total = [...sizes.values()].reduce((a, b) => a + b, 0);
    io.out(`${out}: ${built.images.length} images, ${sizes.size} blobs, ${total} bytes`);
  } finally {
    await fs.rm(work, { recursive: true, force: true });
  }
}

/** k8s-images push ARCHIVE HOST:PORT [--insecure] [--ca F] [--username U --password P] */
export async function k8sImagesPush(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, {
    insecure: "boolean",
    ca: "string",
    username: "string",
    password: "string",
  });
  const [archive, host] = positional;
  if (!archive || !host) throw new InvalidInputError("k8s-images push needs ARCHIVE and HOST:PORT");
  if (host.includes("/"))
    throw new InvalidInputError(
      `k8s-images push: "${host}" must be a registry host[:port]; each image keeps its own repository path`,
    );
  const endpoint = await registryEndpointFor(host, flags, io);
  const layout = await LayoutArchive.open(path.resolve(io.cwd(), archive));
  for (const top of layout.images) {
    const name = top.annotations?.[refNameAnnotation];
    if (!name) throw new InvalidInputError(`${archive}: an image has no ${refNameAnnotation}`);
    const ref = parseImageReference(name);
    const tag = ref.tag ?? "latest";
    const digest = await layout.push(new RepositoryClient(endpoint, ref.repository), tag, name);
    io.out(`${host}/${ref.repository}:${tag}@${digest}`);
  }
}
