// Kubeconfigs as Talos generates them: a client certificate freshly issued by the
// Kubernetes CA (a key of the CA's algorithm, digitalSignature + keyEncipherment,
// clientAuth, NotBefore 10 s in the past for clock skew) inside Talos's one-cluster,
// one-user, one-context template.
import { issueCertificate, loadCertificateAndKey } from "./certificates.js";

/** 8760 h: Kubernetes certificates Talos issues itself, and the admin kubeconfig's default certLifetime. */
export { kubernetesCertLifetimeMs } from "./lifetimes.js";

/** The client certificate's NotBefore lies this far before its issue time. */
export const allowedTimeSkewMs = 10_000;

/** The cluster admin's certificate subject (`talosctl kubeconfig`). */
export const kubernetesAdminCommonName = "admin";
export const kubernetesAdminOrganization = "system:masters";

export interface KubeconfigInput {
  clusterName: string;
  /** PEM certificate and key of the Kubernetes CA that signs the client certificate. */
  issuingCA: { crt: string; key: string };
  /** PEM certificates the client trusts for the API server, concatenated in order. */
  acceptedCAs: readonly string[];
  lifetimeMs: number;
  commonName: string;
  organization: string;
  /** The API server URL, written as given. */
  endpoint: string;
  /** The user is `<username>@<cluster>`, the context `<contextName>@<cluster>`. */
  username: string;
  contextName: string;
  now?: Date;
}

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** The kubeconfig text, byte for byte as Talos's template renders it. */
export function renderKubeconfig(input: {
  clusterName: string;
  endpoint: string;
  caPem: string;
  certPem: string;
  keyPem: string;
  username: string;
  contextName: string;
}): string {
  const user = `${input.username}@${input.clusterName}`;
  const context = `${input.contextName}@${input.clusterName}`;
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: ${input.clusterName}`,
    "  cluster:",
    `    server: ${input.endpoint}`,
    `    certificate-authority-data: ${b64(input.caPem)}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    client-certificate-data: ${b64(input.certPem)}`,
    `    client-key-data: ${b64(input.keyPem)}`,
    "contexts:",
    "- context:",
    `    cluster: ${input.clusterName}`,
    "    namespace: default",
    `    user: ${user}`,
    `  name: ${context}`,
    `current-context: ${context}`,
    "",
  ].join("\n");
}

/** A kubeconfig with a client certificate issued now by `issuingCA`. */
export async function generateKubeconfig(input: KubeconfigInput): Promise<string> {
  const ca = await loadCertificateAndKey(input.issuingCA.crt, input.issuingCA.key);
  const now = input.now ?? new Date();
  const client = await issueCertificate(ca, {
    commonName: input.commonName,
    organizations: [input.organization],
    now: new Date(now.getTime() - allowedTimeSkewMs),
    lifetimeMs: input.lifetimeMs + allowedTimeSkewMs,
    keyUsage: ["digitalSignature", "keyEncipherment"],
    extKeyUsage: ["clientAuth"],
    algorithm: ca.key.algorithm,
  });
  return renderKubeconfig({
    clusterName: input.clusterName,
    endpoint: input.endpoint,
    caPem: input.acceptedCAs.join(""),
    certPem: client.certPem,
    keyPem: client.keyPem,
    username: input.username,
    contextName: input.contextName,
  });
}
