// The credentials a control plane's controllers talk to its own API server with, as
// Talos's kubernetes.NewTemporaryClientControlPlane makes them: a client certificate
// issued on the spot from the cluster's issuing CA (CN admin, O system:masters), valid
// for ten minutes from a minute ago (clocks out of step), for the local endpoint,
// trusting the issuing CA.

import type { KubernetesRootSpec } from "../../resources/catalog/k8s-secrets.js";
import type { KubeCredentials } from "./kube-client.js";

const ADMIN_COMMON_NAME = "admin";
const ADMIN_ORGANIZATION = "system:masters";
const LIFETIME_MS = 10 * 60_000;
const ALLOWED_SKEW_MS = 60_000;

/** Undefined without the issuing CA's key (a control plane always has it). */
export async function temporaryAdminCredentials(
  root: KubernetesRootSpec,
  now = new Date(),
): Promise<KubeCredentials | undefined> {
  if (!root.issuingCA) return undefined;
  // Loaded on first use: the X.509 stack stays off machined's start (test/unit/cmd/start-imports).
  const { issueCertificate, loadCertificateAndKey } = await import("../../pki/index.js");
  const ca = await loadCertificateAndKey(root.issuingCA.crt, root.issuingCA.key);
  const client = await issueCertificate(ca, {
    commonName: ADMIN_COMMON_NAME,
    organizations: [ADMIN_ORGANIZATION],
    now: new Date(now.getTime() - ALLOWED_SKEW_MS),
    lifetimeMs: LIFETIME_MS + ALLOWED_SKEW_MS,
    keyUsage: ["digitalSignature", "keyEncipherment"],
    extKeyUsage: ["clientAuth"],
    algorithm: ca.key.algorithm,
  });
  return { server: root.localEndpoint, ca: root.issuingCA.crt, cert: client.certPem, key: client.keyPem };
}
