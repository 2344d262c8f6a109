import { generateSelfSignedCA, issueCertificate, loadCertificateAndKey, serverCertLifetimeMs, splitSANs } from "../../pki/index.js";
import { InvalidInputError } from "../../errors.js";
import type { PemCertAndKey as PemPair } from "../../resources/codec.js";

const maintenanceCommonName = "maintenance-service.talos.dev";

/** A fresh throw-away maintenance CA (Ed25519), generated at every boot. */
export async function generateMaintenanceRoot(): Promise<PemPair> {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  return { crt: ca.certPem, key: ca.keyPem };
}

/** The maintenance listener's server certificate (reference §2): serverAuth, 24 h. */
export async function issueMaintenanceServerCert(root: PemPair, opts: { addresses: string[]; hostname?: string }): Promise<PemPair> {
  const ca = await loadCertificateAndKey(root.crt, root.key);
  const cert = await issueCertificate(ca, {
    commonName: maintenanceCommonName,
    ipAddresses: unique([...opts.addresses, "127.0.0.1", "::1"]),
    dnsNames: opts.hostname ? [opts.hostname] : [],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: serverCertLifetimeMs,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

/**
 * apid's server certificate from the OS CA (reference §3): CN = FQDN, SANs =
 * certSANs + node addresses + hostname + FQDN + loopback names, serverAuth, 24 h.
 */
export async function issueApiServerCert(
  osCA: PemPair,
  opts: { addresses: string[]; certSANs: string[]; hostname: string; fqdn: string },
): Promise<PemPair> {
  if (!osCA.key) throw new InvalidInputError("machine.ca has no key: the API certificate must be requested from trustd");
  const ca = await loadCertificateAndKey(osCA.crt, osCA.key);
  const sans = splitSANs(opts.certSANs);
  const cert = await issueCertificate(ca, {
    commonName: opts.fqdn,
    ipAddresses: unique([...sans.ipAddresses, ...opts.addresses, "127.0.0.1", "::1"]),
    dnsNames: unique([...sans.dnsNames, opts.hostname, opts.fqdn, "localhost"]),
    extKeyUsage: ["serverAuth"],
    lifetimeMs: serverCertLifetimeMs,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

function unique(values: string[]): string[] {
  return [...new Set(values.filter((v) => v !== ""))];
}
