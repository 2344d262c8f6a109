import { describeError, InvalidInputError } from "../errors.js";
import { decodePem, loadCertificateAndKey, parseCSR, PemLabel, signCSR } from "../pki/index.js";
import { x509 } from "../pki/provider.js";
import type { OSRootSpec } from "../resources/catalog/secrets.js";

/** Signing itself failed (the CA material is unusable): Talos answers Internal. */
export class SigningFailedError extends Error {}

export interface SignedIdentity {
  /** PEM of every accepted OS CA, concatenated (the CertificateResponse `ca`). */
  ca: string;
  crt: string;
  /** What was signed, for trustd's log line. */
  issued: { subject: string; dnsNames: string[]; ipAddresses: string[]; droppedOrganization: boolean };
}

/**
 * Signs a worker's CSR under trustd's rules (reference §5, pki signCSR's
 * defaults): Organization dropped, SANs copied, serverAuth only, 24 h.
 * A CSR that does not decode or parse is an InvalidInputError with Talos's wording.
 */
export async function signWorkerCSR(
  root: Pick<OSRootSpec, "issuingCA" | "acceptedCAs">,
  csrPem: Buffer,
): Promise<SignedIdentity> {
  try {
    decodePem(csrPem, [PemLabel.certificateRequest]);
  } catch (err) {
    throw new InvalidInputError("failed to decode CSR", {}, { cause: err });
  }
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = await parseCSR(csrPem);
  } catch (err) {
    throw new InvalidInputError(`failed to parse CSR: ${describeError(err)}`);
  }
  const droppedOrganization = csr.subjectName.toJSON().some((rdn) => "O" in rdn);
  let cert: x509.X509Certificate;
  let crt: string;
  try {
    if (!root.issuingCA?.key) throw new Error("this node holds no OS CA key");
    const ca = await loadCertificateAndKey(root.issuingCA.crt, root.issuingCA.key);
    ({ cert, certPem: crt } = await signCSR(ca, csrPem));
  } catch (err) {
    throw new SigningFailedError(`failed to sign CSR: ${describeError(err)}`, { cause: err });
  }
  const names = cert.getExtension(x509.SubjectAlternativeNameExtension)?.names.items ?? [];
  return {
    ca: root.acceptedCAs.map((c) => (c.crt.endsWith("\n") ? c.crt : `${c.crt}\n`)).join(""),
    crt,
    issued: {
      subject: cert.subject,
      dnsNames: names.filter((n) => n.type === "dns").map((n) => n.value),
      ipAddresses: names.filter((n) => n.type === "ip").map((n) => n.value),
      droppedOrganization,
    },
  };
}
