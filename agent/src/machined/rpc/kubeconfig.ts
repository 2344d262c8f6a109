// MachineService.Kubeconfig (talosctl kubeconfig): an admin kubeconfig for the cluster,
// its client certificate minted on each call from the cluster CA (CN admin, O
// system:masters, cluster.adminKubeconfig.certLifetime, default 1 year), server = the
// cluster endpoint; sent as one common.Data holding a tar.gz with the single file
// `kubeconfig` (mode 0600), as the Copy protocol carries files.

import { gzipSync } from "node:zlib";
import type { ConfigBundle } from "../../config/bundle.js";
import { durationMs } from "../../config/checks.js";
import { ConflictError, UnimplementedError } from "../../errors.js";
import { dataPadding, encodeHeader, TarType, trailer } from "./tar.js";

export interface KubeconfigContext {
  /** The active machine configuration, or undefined before one is applied. */
  activeConfig(): ConfigBundle | undefined;
}

/** A tar.gz holding one regular file, as Talos wraps the kubeconfig. */
export function singleFileTarGz(name: string, contents: Buffer, mode: number, now = new Date()): Buffer {
  const header = encodeHeader({
    name,
    mode,
    uid: 0,
    gid: 0,
    size: contents.length,
    mtime: Math.floor(now.getTime() / 1000),
    type: TarType.file,
  });
  return gzipSync(Buffer.concat([header, contents, dataPadding(contents.length), trailer]));
}

/** The admin kubeconfig text for the active configuration's cluster. */
export async function adminKubeconfig(config: ConfigBundle): Promise<string> {
  const cluster = config.v1alpha1WithDefaults()?.cluster;
  if (!cluster) throw new ConflictError("kubeconfig can't be generated without a cluster configuration");
  const {
    generateKubeconfig,
    kubernetesAdminCommonName,
    kubernetesAdminOrganization,
    kubernetesCertLifetimeMs,
    pemFromBase64,
  } = await import("../../pki/index.js");
  const issuingCA = { crt: pemFromBase64(cluster.ca?.crt), key: pemFromBase64(cluster.ca?.key) };
  if (!issuingCA.crt || !issuingCA.key) throw new ConflictError("kubeconfig can't be generated: cluster.ca has no key");
  const lifetime = cluster.adminKubeconfig?.certLifetime;
  const lifetimeMs = (lifetime ? durationMs(lifetime) : undefined) || kubernetesCertLifetimeMs;
  return generateKubeconfig({
    clusterName: cluster.clusterName ?? "",
    issuingCA,
    acceptedCAs: [...(cluster.acceptedCAs ?? []).map((c) => pemFromBase64(c.crt)), issuingCA.crt],
    lifetimeMs,
    commonName: kubernetesAdminCommonName,
    organization: kubernetesAdminOrganization,
    endpoint: cluster.controlPlane?.endpoint ?? "",
    username: "admin",
    contextName: "admin",
  });
}

export function kubeconfigHandler(ctx: KubeconfigContext) {
  return async (): Promise<{ bytes: Buffer }> => {
    const config = ctx.activeConfig();
    const type = config?.machineType;
    // Talos answers every node that is not a control plane so, a worker and one without a config alike.
    if (!config || (type !== "controlplane" && type !== "init"))
      throw new UnimplementedError("kubeconfig is only available on control plane nodes");
    const text = await adminKubeconfig(config);
    return { bytes: singleFileTarGz("kubeconfig", Buffer.from(text, "utf8"), 0o600) };
  };
}
