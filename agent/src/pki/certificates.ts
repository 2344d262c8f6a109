// X.509 certificates shaped as Talos issues them: self-signed CAs (IsCA,
// certSign+digitalSignature, serverAuth+clientAuth) and leaf certificates
// (digitalSignature, the requested ExtKeyUsage), random 128-bit serials,
// NotBefore = issue time, signed with Ed25519 or ECDSA-SHA256 by the CA key.
import { randomBytes, type KeyObject } from "node:crypto";
import { isIP } from "node:net";
import { x509 } from "./provider.js";
import { InvalidInputError } from "../errors.js";
import {
  generateKeyPair,
  parsePrivateKeyPem,
  privateKeyToPem,
  signingAlgorithmFor,
  webCryptoKeys,
  type KeyAlgorithm,
  type KeyPair,
} from "./keys.js";
import { decodePem, encodePem, PemLabel } from "./pem.js";
import { caLifetimeMs } from "./lifetimes.js";

export { caLifetimeMs, clientCertLifetimeMs, hourMs, serverCertLifetimeMs } from "./lifetimes.js";
export { splitSANs } from "./sans.js";

export type ExtKeyUsageName = "serverAuth" | "clientAuth";
export type KeyUsageName = "digitalSignature" | "keyEncipherment" | "keyCertSign" | "cRLSign";

const extKeyUsageOid: Record<ExtKeyUsageName, string> = {
  serverAuth: x509.ExtendedKeyUsage.serverAuth,
  clientAuth: x509.ExtendedKeyUsage.clientAuth,
};

const keyUsageFlag: Record<KeyUsageName, x509.KeyUsageFlags> = {
  digitalSignature: x509.KeyUsageFlags.digitalSignature,
  keyEncipherment: x509.KeyUsageFlags.keyEncipherment,
  keyCertSign: x509.KeyUsageFlags.keyCertSign,
  cRLSign: x509.KeyUsageFlags.cRLSign,
};

/** A certificate with its private key, in parsed and PEM (Talos format) forms. */
export interface CertificateAndKey {
  cert: x509.X509Certificate;
  certPem: string;
  key: KeyPair;
  keyPem: string;
}

export type CertificateAuthority = CertificateAndKey;

export interface SubjectOptions {
  commonName?: string;
  /** Subject O values; for client certificates these are the roles (e.g. `os:admin`). */
  organizations?: string[];
}

export interface CAOptions extends SubjectOptions {
  /** Key algorithm; default Ed25519. */
  algorithm?: KeyAlgorithm;
  /** Use this key instead of generating one. */
  key?: KeyPair;
  /** Default 87600 h. */
  lifetimeMs?: number;
  /** NotBefore; default now. */
  now?: Date;
}

export interface IssueOptions extends SubjectOptions {
  dnsNames?: string[];
  ipAddresses?: string[];
  extKeyUsage: ExtKeyUsageName[];
  /** Default `[digitalSignature]`. */
  keyUsage?: KeyUsageName[];
  lifetimeMs: number;
  now?: Date;
  /** Algorithm of the generated key (default Ed25519); ignored when `key` is given. */
  algorithm?: KeyAlgorithm;
  key?: KeyPair;
}

/** Certificate times have one-second resolution; truncating keeps NotBefore exact. */
function truncateToSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/** A random serial below 2^128, hex encoded. */
export function randomSerialHex(): string {
  return randomBytes(16).toString("hex");
}

/** Subject as Go lays it out: Organization RDN (multi-valued) before CommonName. */
export function subjectName(options: SubjectOptions): x509.JsonName {
  const name: x509.JsonName = [];
  const orgs = (options.organizations ?? []).filter((o) => o !== "");
  if (orgs.length > 0) name.push({ O: orgs });
  if (options.commonName) name.push({ CN: [options.commonName] });
  return name;
}

function sanExtension(dnsNames: readonly string[], ipAddresses: readonly string[]): x509.Extension | undefined {
  for (const ip of ipAddresses) {
    if (isIP(ip) === 0) throw new InvalidInputError(`invalid IP address SAN ${JSON.stringify(ip)}`);
  }
  const names: x509.JsonGeneralName[] = [
    ...dnsNames.map((value) => ({ type: "dns" as const, value })),
    ...ipAddresses.map((value) => ({ type: "ip" as const, value })),
  ];
  return names.length > 0 ? new x509.SubjectAlternativeNameExtension(names, false) : undefined;
}

function keyUsageExtension(usages: readonly KeyUsageName[]): x509.KeyUsagesExtension {
  let flags = 0;
  for (const u of usages) flags |= keyUsageFlag[u];
  return new x509.KeyUsagesExtension(flags, true);
}

function spkiOf(publicKey: KeyObject): ArrayBuffer {
  const der = publicKey.export({ format: "der", type: "spki" });
  return der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer;
}

export interface SignParams {
  subject: x509.JsonName;
  publicKey: KeyObject;
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  extKeyUsage: readonly ExtKeyUsageName[];
  keyUsage: readonly KeyUsageName[];
  lifetimeMs: number;
  now?: Date;
}

/** Signs a leaf certificate for `publicKey` with the CA's key. */
export async function signCertificate(ca: CertificateAuthority, params: SignParams): Promise<x509.X509Certificate> {
  const notBefore = truncateToSeconds(params.now ?? new Date());
  const caKeys = await webCryptoKeys(ca.key);
  const extensions: x509.Extension[] = [keyUsageExtension(params.keyUsage)];
  if (params.extKeyUsage.length > 0) {
    extensions.push(
      new x509.ExtendedKeyUsageExtension(
        params.extKeyUsage.map((u) => extKeyUsageOid[u]),
        false,
      ),
    );
  }
  // Authority key id = the CA's subject key id, as Go fills it in.
  const caKeyId = ca.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  if (caKeyId) extensions.push(new x509.AuthorityKeyIdentifierExtension(caKeyId.keyId, false));
  const san = sanExtension(params.dnsNames ?? [], params.ipAddresses ?? []);
  if (san) extensions.push(san);
  return x509.X509CertificateGenerator.create({
    serialNumber: randomSerialHex(),
    subject: params.subject,
    issuer: ca.cert.subjectName,
    notBefore,
    notAfter: new Date(notBefore.getTime() + params.lifetimeMs),
    publicKey: spkiOf(params.publicKey),
    signingKey: caKeys.privateKey,
    signingAlgorithm: signingAlgorithmFor(ca.key.algorithm),
    extensions,
  });
}

/** A self-signed CA; Ed25519 with a 10-year lifetime unless told otherwise. */
export async function generateSelfSignedCA(options: CAOptions = {}): Promise<CertificateAuthority> {
  const key = options.key ?? (await generateKeyPair(options.algorithm ?? "ed25519"));
  const keys = await webCryptoKeys(key);
  const notBefore = truncateToSeconds(options.now ?? new Date());
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialHex(),
    name: subjectName(options),
    notBefore,
    notAfter: new Date(notBefore.getTime() + (options.lifetimeMs ?? caLifetimeMs)),
    keys,
    signingAlgorithm: signingAlgorithmFor(key.algorithm),
    extensions: [
      keyUsageExtension(["digitalSignature", "keyCertSign"]),
      new x509.ExtendedKeyUsageExtension([extKeyUsageOid.serverAuth, extKeyUsageOid.clientAuth], false),
      new x509.BasicConstraintsExtension(true, undefined, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false),
    ],
  });
  return { cert, certPem: certificateToPem(cert), key, keyPem: privateKeyToPem(key) };
}

/** Issues a leaf certificate with a fresh key (Ed25519 by default) signed by `ca`. */
export async function issueCertificate(ca: CertificateAuthority, options: IssueOptions): Promise<CertificateAndKey> {
  const key = options.key ?? (await generateKeyPair(options.algorithm ?? "ed25519"));
  const cert = await signCertificate(ca, {
    subject: subjectName(options),
    publicKey: key.publicKey,
    dnsNames: options.dnsNames ?? [],
    ipAddresses: options.ipAddresses ?? [],
    extKeyUsage: options.extKeyUsage,
    keyUsage: options.keyUsage ?? ["digitalSignature"],
    lifetimeMs: options.lifetimeMs,
    ...(options.now ? { now: options.now } : {}),
  });
  return { cert, certPem: certificateToPem(cert), key, keyPem: privateKeyToPem(key) };
}

export function certificateToPem(cert: x509.X509Certificate): string {
  return encodePem(PemLabel.certificate, cert.rawData);
}

/** Parses the first `CERTIFICATE` block. */
export function parseCertificatePem(pem: string | Buffer): x509.X509Certificate {
  const block = decodePem(pem, [PemLabel.certificate]);
  try {
    return new x509.X509Certificate(block.der);
  } catch (err) {
    throw new InvalidInputError("failed to parse certificate", {}, { cause: err });
  }
}

/** A certificate and its key from PEM (any key format Talos writes); checks that they belong together. */
export async function loadCertificateAndKey(
  certPem: string | Buffer,
  keyPem: string | Buffer,
): Promise<CertificateAndKey> {
  const cert = parseCertificatePem(certPem);
  const key = parsePrivateKeyPem(keyPem);
  assertKeyMatchesCertificate(cert, key);
  const text = (v: string | Buffer) => (typeof v === "string" ? v : v.toString("utf8"));
  return { cert, certPem: text(certPem), key, keyPem: text(keyPem) };
}

/** Throws InvalidInputError unless `key` is the private half of the certificate's public key. */
export function assertKeyMatchesCertificate(cert: x509.X509Certificate, key: KeyPair): void {
  const certSpki = Buffer.from(cert.publicKey.rawData);
  const keySpki = key.publicKey.export({ format: "der", type: "spki" });
  if (!certSpki.equals(keySpki)) throw new InvalidInputError("private key does not match the certificate");
}
