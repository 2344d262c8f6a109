import { createHash, X509Certificate } from "node:crypto";
import { InvalidInputError } from "../errors.js";
import { decodePem, PemLabel } from "./pem.js";

/**
 * SHA-256 over the certificate's SubjectPublicKeyInfo, standard base64 — the
 * form Talos logs for the maintenance certificate and talosctl's
 * `--cert-fingerprint` accepts. Read with node:crypto (OpenSSL), which the
 * maintenance banner needs without loading @peculiar/x509.
 */
export function spkiFingerprint(certPem: string | Buffer): string {
  const block = decodePem(certPem, [PemLabel.certificate]);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(block.der);
  } catch (err) {
    throw new InvalidInputError("failed to parse certificate", {}, { cause: err });
  }
  return createHash("sha256")
    .update(cert.publicKey.export({ format: "der", type: "spki" }))
    .digest("base64");
}
