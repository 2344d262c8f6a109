// Certificates machined's secrets controllers issue. Every one from an Ed25519 CA (the maintenance CA, Talos's OS CA)
// is built by pki/ed25519-certificates.ts with node:crypto alone; @peculiar/x509 (pki/index.ts) is imported only
// for what needs it (a CSR, a CA of another algorithm), so it is never loaded on the way to the maintenance API.
import {
  generateEd25519CA,
  issueEd25519Certificate,
  type Ed25519ExtKeyUsage,
  type Ed25519KeyUsage,
} from "../../pki/ed25519-certificates.js";
import { caLifetimeMs, serverCertLifetimeMs } from "../../pki/lifetimes.js";
import { parsePrivateKeyPem } from "../../pki/keys.js";
import type { PemCertAndKey as PemPair } from "../../resources/codec.js";
import type { CertSANSpec } from "../../resources/catalog/secrets.js";

const impersonatorRole = "os:impersonator";

/** A fresh throw-away maintenance CA (Ed25519), generated at every boot. */
export async function generateMaintenanceRoot(): Promise<PemPair> {
  const ca = await generateEd25519CA({ organizations: ["talos"], lifetimeMs: caLifetimeMs });
  return { crt: ca.certPem, key: ca.keyPem };
}

/**
 * A server certificate for `sans` from `ca` (reference §3): CN = FQDN, the SANs
 * given, serverAuth, 24 h; trustd's also carries keyEncipherment, as Talos issues it.
 */
export async function issueServerCert(
  ca: PemPair,
  sans: CertSANSpec,
  keyUsage: Ed25519KeyUsage[] = ["digitalSignature"],
): Promise<PemPair> {
  return issueLeaf(ca, {
    commonName: sans.fqdn,
    ipAddresses: sans.ips,
    dnsNames: sans.dnsNames,
    extKeyUsage: ["serverAuth"],
    keyUsage,
  });
}

/** apid's client certificate for forwarding (control plane): CN = FQDN, O = os:impersonator, clientAuth, 24 h. */
export async function issueImpersonatorClientCert(ca: PemPair, fqdn: string): Promise<PemPair> {
  return issueLeaf(ca, {
    commonName: fqdn,
    organizations: [impersonatorRole],
    extKeyUsage: ["clientAuth"],
    keyUsage: ["digitalSignature"],
  });
}

interface LeafOptions {
  commonName: string;
  organizations?: string[];
  ipAddresses?: string[];
  dnsNames?: string[];
  extKeyUsage: Ed25519ExtKeyUsage[];
  keyUsage: Ed25519KeyUsage[];
}

/** A 24 h leaf with a fresh Ed25519 key: built natively from an Ed25519 CA, through @peculiar/x509 from any other. */
async function issueLeaf(ca: PemPair, options: LeafOptions): Promise<PemPair> {
  if (parsePrivateKeyPem(ca.key).algorithm === "ed25519") {
    const cert = await issueEd25519Certificate(
      { certPem: ca.crt, keyPem: ca.key },
      { ...options, lifetimeMs: serverCertLifetimeMs },
    );
    return { crt: cert.certPem, key: cert.keyPem };
  }
  const { issueCertificate, loadCertificateAndKey } = await import("../../pki/index.js");
  const cert = await issueCertificate(await loadCertificateAndKey(ca.crt, ca.key), {
    ...options,
    lifetimeMs: serverCertLifetimeMs,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

/** A worker's request for its apid server certificate: an Ed25519 key and a CSR naming `sans`. */
export async function createServerCSR(sans: CertSANSpec): Promise<{ csrPem: string; keyPem: string }> {
  const { createCSR } = await import("../../pki/index.js");
  const { csrPem, keyPem } = await createCSR({ commonName: sans.fqdn, dnsNames: sans.dnsNames, ipAddresses: sans.ips });
  return { csrPem, keyPem };
}

export function unique(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v !== ""))];
}
