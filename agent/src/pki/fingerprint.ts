import { createHash } from "node:crypto";
import { parseCertificatePem } from "./certificates.js";

/**
 * SHA-256 over the certificate's SubjectPublicKeyInfo, standard base64 — the
 * form Talos logs for the maintenance certificate and talosctl's
 * `--cert-fingerprint` accepts.
 */
export function spkiFingerprint(certPem: string | Buffer): string {
  const cert = parseCertificatePem(certPem);
  return createHash("sha256").update(Buffer.from(cert.publicKey.rawData)).digest("base64");
}
