// node:tls (OpenSSL) reads PKCS#8 keys only under the generic `PRIVATE KEY`
// label; Talos writes Ed25519 ones as `ED25519 PRIVATE KEY` with the same body.
// SEC1 (`EC PRIVATE KEY`) and PKCS#1 (`RSA PRIVATE KEY`) are read as they are.

export function tlsKeyPem(pem: string | Buffer): string {
  const text = typeof pem === "string" ? pem : pem.toString("utf8");
  return text.replace(/-----(BEGIN|END) ED25519 PRIVATE KEY-----/g, "-----$1 PRIVATE KEY-----");
}
