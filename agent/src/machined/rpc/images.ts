// ImageList and ImagePull through the CRI containerd, as Talos (both namespaces, NS_SYSTEM: "system"
// holding the images of etcd and the kubelet, NS_CRI: "k8s.io"); a node that runs no CRI containerd
// at all uses its system containerd instead. Beyond Talos, ImagePull of `oci-archive:<path>` imports an
// OCI image archive already on the node (air-gapped sites).
import type * as grpc from "@grpc/grpc-js";
import { InvalidInputError, UnimplementedError } from "../../errors.js";
import { ARCHIVE_PREFIX, importArchive } from "../../services/images/archive.js";
import { pullImage } from "../../services/images/pull.js";
import type { Registries } from "../../services/images/registry.js";
import { imageSize, nodePlatform } from "../../services/images/store.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { runningCri, type ContainerdClients, type CriAccess } from "./containers.js";
import { cancellation, send } from "./stream.js";

/** common.ContainerdNamespace → containerd's namespace name. */
export function containerdNamespace(ns: number | undefined): string {
  if (ns === 1) return "system";
  if (ns === 2) return "k8s.io";
  throw new InvalidInputError(`invalid namespace ${ns === 0 || ns === undefined ? "NS_UNKNOWN" : ns}`);
}

function imageClient(c: ContainerdClients, cri: CriAccess | undefined, ns: number | undefined): ContainerdClient {
  const namespace = containerdNamespace(ns);
  if (cri) return runningCri(cri).containerd(namespace);
  if (!c) throw new UnimplementedError("this node runs no containerd");
  return c(namespace);
}

export async function streamImageList(
  c: ContainerdClients,
  cri: CriAccess | undefined,
  call: grpc.ServerWritableStream<{ namespace?: number }, unknown>,
): Promise<void> {
  const client = imageClient(c, cri, call.request.namespace);
  const { dispose } = cancellation(call);
  try {
    for (const image of await client.listImages()) {
      // As Talos: a size that cannot be worked out (content missing) is reported as 0.
      const size = await imageSize(client, image.target, nodePlatform()).catch(() => 0);
      const sent = await send(call, {
        name: image.name,
        digest: image.target.digest,
        size,
        created_at: image.created_at,
      });
      if (!sent) return;
    }
  } finally {
    dispose();
  }
  if (!call.cancelled) call.end();
}

export async function imagePullResponse(
  c: ContainerdClients,
  cri: CriAccess | undefined,
  registries: () => Registries | undefined,
  req: { namespace?: number; reference?: string },
) {
  const client = imageClient(c, cri, req.namespace);
  const reference = req.reference ?? "";
  if (reference.startsWith(ARCHIVE_PREFIX)) await importArchive(client, reference.slice(ARCHIVE_PREFIX.length));
  else await pullImage(client, reference, registries());
  return { messages: [{}] };
}
