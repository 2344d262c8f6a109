// Certificate signing requests: creation (worker machined asking trustd) and
// signing under trustd's rules (reference §5): subject copied without
// Organization, so a CSR can never obtain roles; DNS/IP SANs copied;
// digitalSignature + serverAuth only; not a CA; 24 h.
import { createPublicKey } from "node:crypto";
import { x509 } from "./provider.js";
import { InvalidInputError } from "../errors.js";
import {
  certificateToPem,
  serverCertLifetimeMs,
  signCertificate,
  subjectName,
  type CertificateAuthority,
  type ExtKeyUsageName,
  type SubjectOptions,
} from "./certificates.js";
import {
  generateKeyPair,
  privateKeyToPem,
  signingAlgorithmFor,
  webCryptoKeys,
  type KeyAlgorithm,
  type KeyPair,
} from "./keys.js";
import { decodePem, encodePem, PemLabel } from "./pem.js";

export interface CSROptions extends SubjectOptions {
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Use this key; otherwise one is generated (Ed25519 unless `algorithm` says otherwise). */
  key?: KeyPair;
  algorithm?: KeyAlgorithm;
}

export interface CSRAndKey {
  csrPem: string;
  key: KeyPair;
  keyPem: string;
}

export async function createCSR(options: CSROptions = {}): Promise<CSRAndKey> {
  const key = options.key ?? (await generateKeyPair(options.algorithm ?? "ed25519"));
  const names: x509.JsonGeneralName[] = [
    ...(options.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subjectName(options),
    keys: await webCryptoKeys(key),
    signingAlgorithm: signingAlgorithmFor(key.algorithm),
    extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names, false)] : [],
  });
  return { csrPem: encodePem(PemLabel.certificateRequest, csr.rawData), key, keyPem: privateKeyToPem(key) };
}

export interface SignedCSR {
  cert: x509.X509Certificate;
  certPem: string;
}

/** Parses and checks a PEM CSR; malformed input or a bad self-signature is an InvalidInputError. */
export async function parseCSR(csrPem: string | Buffer): Promise<x509.Pkcs10CertificateRequest> {
  const block = decodePem(csrPem, [PemLabel.certificateRequest]);
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(block.der);
  } catch (err) {
    throw new InvalidInputError("failed to parse certificate request", {}, { cause: err });
  }
  let valid = false;
  try {
    valid = await csr.verify();
  } catch (err) {
    throw new InvalidInputError("failed to verify certificate request signature", {}, { cause: err });
  }
  if (!valid) throw new InvalidInputError("certificate request signature is invalid");
  return csr;
}

const subjectAltNameOid = "2.5.29.17";
const organizationKeys = new Set(["O", "2.5.4.10"]);

export interface SignCSROptions {
  now?: Date;
  /** Default 24 h. */
  lifetimeMs?: number;
  /** Default `["serverAuth"]` (trustd). */
  extKeyUsage?: ExtKeyUsageName[];
  /**
   * Keep the CSR's Organization (roles). trustd never does; an operator signing a
   * client CSR offline with the CA key (`ctl gen crt`) does.
   */
  keepOrganization?: boolean;
}

/** Signs a CSR with the CA; the defaults are trustd's rules. */
export async function signCSR(
  ca: CertificateAuthority,
  csrPem: string | Buffer,
  options: SignCSROptions = {},
): Promise<SignedCSR> {
  const csr = await parseCSR(csrPem);
  const subject: x509.JsonName = [];
  for (const rdn of csr.subjectName.toJSON()) {
    const kept = Object.fromEntries(
      Object.entries(rdn).filter(([type]) => options.keepOrganization || !organizationKeys.has(type)),
    );
    if (Object.keys(kept).length > 0) subject.push(kept);
  }
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  const sanRaw = csr.getExtension(subjectAltNameOid);
  const san = sanRaw ? new x509.SubjectAlternativeNameExtension(sanRaw.rawData) : undefined;
  for (const name of san?.names.items ?? []) {
    if (name.type === "dns") dnsNames.push(name.value);
    else if (name.type === "ip") ipAddresses.push(name.value);
  }
  const publicKey = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: "der", type: "spki" });
  const cert = await signCertificate(ca, {
    subject,
    publicKey,
    dnsNames,
    ipAddresses,
    extKeyUsage: options.extKeyUsage ?? ["serverAuth"],
    keyUsage: ["digitalSignature"],
    lifetimeMs: options.lifetimeMs ?? serverCertLifetimeMs,
    ...(options.now ? { now: options.now } : {}),
  });
  return { cert, certPem: certificateToPem(cert) };
}
