// PEM armor: label + base64 body in 64-column lines, as Go's encoding/pem writes it.
import { InvalidInputError } from "../errors.js";

/** PEM labels Talos writes. */
export const PemLabel = {
  certificate: "CERTIFICATE",
  certificateRequest: "CERTIFICATE REQUEST",
  /** Ed25519 private key: the body is PKCS#8 despite the specific label. */
  ed25519PrivateKey: "ED25519 PRIVATE KEY",
  /** SEC1 ECPrivateKey. */
  ecPrivateKey: "EC PRIVATE KEY",
  /** PKCS#1 RSAPrivateKey. */
  rsaPrivateKey: "RSA PRIVATE KEY",
  /** Generic PKCS#8 (what node:tls and OpenSSL expect). */
  privateKey: "PRIVATE KEY",
  publicKey: "PUBLIC KEY",
  /** PKIX SubjectPublicKeyInfo of a P-256 key, as Talos labels it. */
  ecPublicKey: "EC PUBLIC KEY",
  /** PKIX SubjectPublicKeyInfo of an Ed25519 key, as Talos labels it. */
  ed25519PublicKey: "ED25519 PUBLIC KEY",
} as const;

export interface PemBlock {
  label: string;
  der: Buffer;
}

export function encodePem(label: string, der: Uint8Array | ArrayBuffer): string {
  const body = Buffer.from(der instanceof ArrayBuffer ? new Uint8Array(der) : der).toString("base64");
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

const blockPattern = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

/** Every PEM block in the text, in order (text between blocks is ignored, as Go does). */
export function decodePemBlocks(text: string | Buffer): PemBlock[] {
  const source = typeof text === "string" ? text : text.toString("utf8");
  const blocks: PemBlock[] = [];
  for (const m of source.matchAll(blockPattern)) {
    const body = m[2]!;
    // Headers (e.g. Proc-Type) are not used by anything Talos writes; refuse them rather than misread.
    if (body.includes(":")) throw new InvalidInputError(`PEM block ${m[1]} has headers, which are not supported`);
    blocks.push({ label: m[1]!, der: Buffer.from(body.replace(/\s+/g, ""), "base64") });
  }
  return blocks;
}

/** Base64 of PEM text: how configs, talosconfig and resource YAML carry PEM material. */
export function pemToBase64(pem: string): string {
  return Buffer.from(pem, "utf8").toString("base64");
}

/** PEM text from its base64 form; "" for an absent or non-string value (e.g. a worker's CA key). */
export function pemFromBase64(value: unknown): string {
  return typeof value === "string" && value !== "" ? Buffer.from(value, "base64").toString("utf8") : "";
}

/** The first PEM block; with `expectLabels`, its label must be one of them. */
export function decodePem(text: string | Buffer, expectLabels?: readonly string[]): PemBlock {
  const [block] = decodePemBlocks(text);
  if (!block) throw new InvalidInputError("no PEM data found");
  if (expectLabels && !expectLabels.includes(block.label)) {
    throw new InvalidInputError(
      `unexpected PEM block ${JSON.stringify(block.label)}, want one of ${expectLabels.join(", ")}`,
    );
  }
  return block;
}
