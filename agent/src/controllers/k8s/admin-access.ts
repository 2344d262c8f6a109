// Admin credentials for the local API server, minted from the cluster CA in the
// machine config as Talos mints its localhost admin kubeconfig (O=system:masters,
// CN=admin, server https://localhost:<localAPIServerPort>).

import type { ConfigBundle } from "../../config/bundle.js";
import { defaults } from "../../config/defaults.js";
import { clientCertLifetimeMs, issueCertificate, loadCertificateAndKey } from "../../pki/index.js";
import type { KubeCredentials } from "./kube-client.js";
import type { KubeAccess } from "./manifest-apply.js";

const fromBase64 = (s: string): string => Buffer.from(s, "base64").toString("utf8");

/** Credentials for `server` (default: this node's API server on localhost); undefined without the CA key. */
export async function adminCredentials(config: ConfigBundle | undefined, server?: string): Promise<KubeCredentials | undefined> {
  const cluster = config?.v1alpha1()?.cluster;
  if (!cluster?.ca?.crt || !cluster.ca.key) return undefined;
  const caCrt = fromBase64(cluster.ca.crt);
  const ca = await loadCertificateAndKey(caCrt, fromBase64(cluster.ca.key));
  const admin = await issueCertificate(ca, { commonName: "admin", organizations: ["system:masters"], extKeyUsage: ["clientAuth"], lifetimeMs: clientCertLifetimeMs, algorithm: ca.key.algorithm === "rsa" ? "ecdsa-p256" : ca.key.algorithm });
  const port = cluster.controlPlane?.localAPIServerPort ?? defaults.localAPIServerPort;
  return { server: server ?? `https://localhost:${port}`, ca: caCrt, cert: admin.certPem, key: admin.keyPem };
}

/**
 * The apply controller's access: admin credentials for the active config, minted once per
 * cluster CA and reused for half their lifetime.
 */
export function adminAccess(activeConfig: () => ConfigBundle | undefined): KubeAccess {
  let cached: { ca: string; creds: KubeCredentials; until: number } | undefined;
  return async () => {
    const config = activeConfig();
    const ca = config?.v1alpha1()?.cluster?.ca?.crt ?? "";
    if (cached && cached.ca === ca && Date.now() < cached.until) return cached.creds;
    const creds = await adminCredentials(config);
    cached = creds && { ca, creds, until: Date.now() + clientCertLifetimeMs / 2 };
    return creds;
  };
}
