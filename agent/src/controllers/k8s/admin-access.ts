// Admin credentials for the local API server, minted from the cluster CA in the
// machine config as Talos mints its localhost admin kubeconfig (O=system:masters,
// CN=admin, server https://localhost:<localAPIServerPort>).

import type { ConfigBundle } from "../../config/bundle.js";
import { defaults } from "../../config/defaults.js";
import { clientCertLifetimeMs, issueCertificate, loadCertificateAndKey } from "../../pki/index.js";
import type { KubeCredentials } from "./kube-client.js";

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
