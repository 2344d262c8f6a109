// The certificates and kubeconfigs a control plane issues itself from the Kubernetes CAs,
// with Talos's subjects, usages and 1-year lifetime. Each key is of its CA's algorithm
// (a `talosctl gen config` cluster: ECDSA P-256).
import { issueCertificate, loadCertificateAndKey, type IssueOptions } from "../../pki/certificates.js";
import { generateKubeconfig, kubernetesAdminOrganization, kubernetesCertLifetimeMs } from "../../pki/kubeconfig.js";
import type { PemCertAndKey } from "../../resources/codec.js";
import type { CertSANSpec } from "../../resources/catalog/secrets.js";
import type {
  KubernetesCertsSpec,
  KubernetesDynamicCertsSpec,
  KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";

export const controllerManagerUser = "system:kube-controller-manager";
export const schedulerUser = "system:kube-scheduler";
/** The admin identity Talos's own components use (never handed to a user). */
export const talosAdminCommonName = "talos:admin";
export const apiServerKubeletClientCommonName = "apiserver-kubelet-client";
export const frontProxyCommonName = "front-proxy-client";

type LeafOptions = Omit<IssueOptions, "lifetimeMs" | "keyUsage" | "algorithm">;

async function issueLeaf(ca: PemCertAndKey, options: LeafOptions, now: Date): Promise<PemCertAndKey> {
  const authority = await loadCertificateAndKey(ca.crt, ca.key);
  const leaf = await issueCertificate(authority, {
    ...options,
    keyUsage: ["digitalSignature", "keyEncipherment"],
    lifetimeMs: kubernetesCertLifetimeMs,
    algorithm: authority.key.algorithm,
    now,
  });
  return { crt: leaf.certPem, key: leaf.keyPem };
}

/** kube-apiserver's serving, kubelet-client and front-proxy certificates (KubernetesDynamicCerts). */
export async function issueDynamicCerts(
  issuingCA: PemCertAndKey,
  aggregatorCA: PemCertAndKey,
  sans: CertSANSpec,
  now = new Date(),
): Promise<KubernetesDynamicCertsSpec> {
  const [apiServer, apiServerKubeletClient, frontProxy] = await Promise.all([
    issueLeaf(
      issuingCA,
      {
        commonName: "kube-apiserver",
        organizations: ["kube-master"],
        dnsNames: sans.dnsNames,
        ipAddresses: sans.ips,
        extKeyUsage: ["serverAuth"],
      },
      now,
    ),
    issueLeaf(
      issuingCA,
      {
        commonName: apiServerKubeletClientCommonName,
        organizations: [kubernetesAdminOrganization],
        extKeyUsage: ["clientAuth"],
      },
      now,
    ),
    issueLeaf(aggregatorCA, { commonName: frontProxyCommonName, extKeyUsage: ["clientAuth"] }, now),
  ]);
  return { apiServer, apiServerKubeletClient, frontProxy };
}

/** The controller manager's, the scheduler's and Talos's own admin kubeconfigs (KubernetesSecrets). */
export async function issueControlPlaneKubeconfigs(
  root: KubernetesRootSpec,
  issuingCA: PemCertAndKey,
  now = new Date(),
): Promise<KubernetesCertsSpec> {
  const acceptedCAs = root.acceptedCAs.map((c) => c.crt);
  const common = { clusterName: root.name, issuingCA, lifetimeMs: kubernetesCertLifetimeMs, now };
  const component = (user: string) =>
    generateKubeconfig({
      ...common,
      acceptedCAs,
      commonName: user,
      organization: user,
      endpoint: root.localEndpoint,
      username: user,
      contextName: "default",
    });
  // As Talos's admin generator: the issuing CA is appended to the accepted CAs, which already end with it.
  const admin = (endpoint: string) =>
    generateKubeconfig({
      ...common,
      acceptedCAs: [...acceptedCAs, issuingCA.crt],
      commonName: talosAdminCommonName,
      organization: kubernetesAdminOrganization,
      endpoint,
      username: "admin",
      contextName: "admin",
    });
  const [controllerManagerKubeconfig, schedulerKubeconfig, adminKubeconfig, localhostAdminKubeconfig] =
    await Promise.all([
      component(controllerManagerUser),
      component(schedulerUser),
      admin(root.endpoint),
      admin(root.localEndpoint),
    ]);
  return { schedulerKubeconfig, controllerManagerKubeconfig, localhostAdminKubeconfig, adminKubeconfig };
}
