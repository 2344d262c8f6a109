import { createCSR, generateSelfSignedCA, issueCertificate, loadCertificateAndKey, serverCertLifetimeMs, type KeyUsageName } from "../../pki/index.js";
import type { PemCertAndKey as PemPair } from "../../resources/codec.js";
import type { CertSANSpec } from "../../resources/catalog/secrets.js";

const impersonatorRole = "os:impersonator";

/** A fresh throw-away maintenance CA (Ed25519), generated at every boot. */
export async function generateMaintenanceRoot(): Promise<PemPair> {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  return { crt: ca.certPem, key: ca.keyPem };
}

/**
 * A server certificate for `sans` from `ca` (reference §3): CN = FQDN, the SANs
 * given, serverAuth, 24 h; trustd's also carries keyEncipherment, as Talos issues it.
 */
export async function issueServerCert(ca: PemPair, sans: CertSANSpec, keyUsage: KeyUsageName[] = ["digitalSignature"]): Promise<PemPair> {
  const authority = await loadCertificateAndKey(ca.crt, ca.key);
  const cert = await issueCertificate(authority, {
    commonName: sans.fqdn,
    ipAddresses: sans.ips,
    dnsNames: sans.dnsNames,
    extKeyUsage: ["serverAuth"],
    keyUsage,
    lifetimeMs: serverCertLifetimeMs,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

/** apid's client certificate for forwarding (control plane): CN = FQDN, O = os:impersonator, clientAuth, 24 h. */
export async function issueImpersonatorClientCert(ca: PemPair, fqdn: string): Promise<PemPair> {
  const authority = await loadCertificateAndKey(ca.crt, ca.key);
  const cert = await issueCertificate(authority, {
    commonName: fqdn,
    organizations: [impersonatorRole],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: serverCertLifetimeMs,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

/** A worker's request for its apid server certificate: an Ed25519 key and a CSR naming `sans`. */
export async function createServerCSR(sans: CertSANSpec): Promise<{ csrPem: string; keyPem: string }> {
  const { csrPem, keyPem } = await createCSR({ commonName: sans.fqdn, dnsNames: sans.dnsNames, ipAddresses: sans.ips });
  return { csrPem, keyPem };
}

export function unique(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v !== ""))];
}
