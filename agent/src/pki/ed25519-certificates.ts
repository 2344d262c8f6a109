// Certificates signed by an Ed25519 key, built with node:crypto and der.ts alone: the
// maintenance CA and certificate on every boot, and apid's certificates from the OS CA.
// The same fields, extensions and encodings certificates.ts (@peculiar/x509) produces
// (test/unit/pki/ed25519-certificates.test.ts compares them byte for byte), without
// loading @peculiar/x509, asn1js, tsyringe and reflect-metadata on machined's start
// (hundreds of KiB of modules to compile and evaluate, then the library's first use).
import { createHash, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";
import { InvalidInputError } from "../errors.js";
import {
  bitString,
  boolean,
  children,
  directoryString,
  explicit,
  implicitPrimitive,
  octetString,
  oid,
  readElement,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  type DerElement,
} from "./der.js";
import { generateKeyPair, parsePrivateKeyPem, privateKeyToPem, type KeyPair } from "./keys.js";
import { decodePem, encodePem, PemLabel } from "./pem.js";

const OID = {
  ed25519: "1.3.101.112",
  organization: "2.5.4.10",
  commonName: "2.5.4.3",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  basicConstraints: "2.5.29.19",
  subjectKeyId: "2.5.29.14",
  authorityKeyId: "2.5.29.35",
  subjectAltName: "2.5.29.17",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

// KeyUsage's named bits (RFC 5280 4.2.1.3), bit 0 first.
const keyUsageBit = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;
export type Ed25519KeyUsage = keyof typeof keyUsageBit;
export type Ed25519ExtKeyUsage = "serverAuth" | "clientAuth";

export interface Ed25519Subject {
  commonName?: string;
  /** One multi-valued O RDN, in this order. */
  organizations?: string[];
}

export interface Ed25519CAOptions extends Ed25519Subject {
  lifetimeMs: number;
  now?: Date;
  key?: KeyPair;
  /** 16 random bytes unless given (tests). */
  serial?: Buffer;
}

export interface Ed25519IssueOptions extends Ed25519Subject {
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  extKeyUsage: readonly Ed25519ExtKeyUsage[];
  keyUsage: readonly Ed25519KeyUsage[];
  lifetimeMs: number;
  now?: Date;
  /** A fresh Ed25519 key unless given. */
  key?: KeyPair;
  serial?: Buffer;
}

export interface Ed25519Issued {
  certPem: string;
  keyPem: string;
  key: KeyPair;
}

const ed25519Algorithm = sequence(oid(OID.ed25519));

/** Subject as Go lays it out: the Organization RDN (multi-valued) before CommonName. */
function name(subject: Ed25519Subject): Buffer {
  const rdns: Buffer[] = [];
  const orgs = (subject.organizations ?? []).filter((o) => o !== "");
  if (orgs.length > 0) rdns.push(set(...orgs.map((o) => sequence(oid(OID.organization), directoryString(o)))));
  if (subject.commonName) rdns.push(set(sequence(oid(OID.commonName), directoryString(subject.commonName))));
  return sequence(...rdns);
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? sequence(oid(id), boolean(true), octetString(value)) : sequence(oid(id), octetString(value));
}

/** KeyUsage as a DER named-bit BIT STRING: trailing zero bits are not encoded. */
function keyUsageValue(usages: readonly Ed25519KeyUsage[]): Buffer {
  let bits = 0;
  for (const u of usages) bits |= 0x80 >> keyUsageBit[u];
  if (bits === 0) throw new InvalidInputError("a certificate needs at least one key usage");
  let unused = 0;
  while (!((bits >> unused) & 1)) unused++;
  return Buffer.from([0x03, 0x02, unused, bits]);
}

/** SHA-1 of the subjectPublicKey bits (RFC 5280 4.2.1.2, method 1), as Go and @peculiar/x509 compute it. */
function keyIdentifier(spki: Buffer): Buffer {
  const bits = children(readElement(spki))[1];
  if (bits?.tag !== 0x03) throw new InvalidInputError("malformed SubjectPublicKeyInfo");
  return createHash("sha1").update(bits.contents.subarray(1)).digest();
}

function ipBytes(ip: string): Buffer {
  const family = isIP(ip);
  if (family === 4) return Buffer.from(ip.split(".").map(Number));
  if (family === 6) return ipv6Bytes(ip);
  throw new InvalidInputError(`invalid IP address SAN ${JSON.stringify(ip)}`);
}

/** 16 bytes of an address isIP() accepted as IPv6 (with "::" and a dotted IPv4 tail allowed; no zone). */
function ipv6Bytes(ip: string): Buffer {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = text.slice(0, dotted.index) + ((a << 8) | b).toString(16) + ":" + ((c << 8) | d).toString(16);
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all =
    tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

function subjectAltNames(dnsNames: readonly string[], ipAddresses: readonly string[]): Buffer {
  return sequence(
    ...dnsNames.map((d) => implicitPrimitive(2, Buffer.from(d, "ascii"))),
    ...ipAddresses.map((ip) => implicitPrimitive(7, ipBytes(ip))),
  );
}

/** Certificate times have one-second resolution; truncating keeps NotBefore exact. */
function truncateToSeconds(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

function signed(tbs: Buffer, signer: KeyPair): string {
  if (signer.algorithm !== "ed25519")
    throw new InvalidInputError(`an Ed25519 certificate's signer must be Ed25519, got ${signer.algorithm}`);
  const der = sequence(tbs, ed25519Algorithm, bitString(sign(null, tbs, signer.privateKey)));
  return encodePem(PemLabel.certificate, der);
}

function tbsCertificate(p: {
  serial: Buffer;
  issuer: Buffer;
  subject: Buffer;
  notBefore: Date;
  lifetimeMs: number;
  spki: Buffer;
  extensions: Buffer[];
}): Buffer {
  return sequence(
    explicit(0, smallInteger(2)),
    unsignedInteger(p.serial),
    ed25519Algorithm,
    p.issuer,
    sequence(time(p.notBefore), time(new Date(p.notBefore.getTime() + p.lifetimeMs))),
    p.subject,
    p.spki,
    explicit(3, sequence(...p.extensions)),
  );
}

const spkiOf = (key: KeyPair): Buffer => key.publicKey.export({ format: "der", type: "spki" });

/** A self-signed Ed25519 CA as certificates.ts's generateSelfSignedCA makes one: IsCA, digitalSignature+keyCertSign, serverAuth+clientAuth. */
export async function generateEd25519CA(options: Ed25519CAOptions): Promise<Ed25519Issued> {
  const key = options.key ?? (await generateKeyPair("ed25519"));
  const spki = spkiOf(key);
  const subject = name(options);
  const tbs = tbsCertificate({
    serial: options.serial ?? randomBytes(16),
    issuer: subject,
    subject,
    notBefore: truncateToSeconds(options.now ?? new Date()),
    lifetimeMs: options.lifetimeMs,
    spki,
    extensions: [
      extension(OID.keyUsage, true, keyUsageValue(["digitalSignature", "keyCertSign"])),
      extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth), oid(OID.clientAuth))),
      extension(OID.basicConstraints, true, sequence(boolean(true))),
      extension(OID.subjectKeyId, false, octetString(keyIdentifier(spki))),
    ],
  });
  return { certPem: signed(tbs, key), keyPem: privateKeyToPem(key), key };
}

/** What issuing needs of a CA certificate: its subject as encoded, its key identifier, its public key. */
interface IssuerFields {
  subject: Buffer;
  subjectKeyId: Buffer | undefined;
  spki: Buffer;
}

function issuerFields(certPem: string | Buffer): IssuerFields {
  const der = decodePem(certPem, [PemLabel.certificate]).der;
  const tbs = children(readElement(der))[0];
  if (!tbs) throw new InvalidInputError("malformed certificate");
  const fields = children(tbs);
  // version [0] is optional; serial, signature, issuer, validity, subject, SubjectPublicKeyInfo follow.
  const at = fields[0]?.tag === 0xa0 ? 1 : 0;
  const subject = fields[at + 4];
  const spki = fields[at + 5];
  if (!subject || !spki) throw new InvalidInputError("malformed certificate");
  const extensions = fields.find((f) => f.tag === 0xa3);
  return { subject: subject.encoded, spki: spki.encoded, subjectKeyId: extensions && subjectKeyIdOf(extensions) };
}

function subjectKeyIdOf(extensionsField: DerElement): Buffer | undefined {
  const ski = oid(OID.subjectKeyId);
  const list = children(extensionsField)[0];
  if (!list) return undefined;
  for (const ext of children(list)) {
    const parts = children(ext);
    if (!parts[0]?.encoded.equals(ski)) continue;
    const value = parts.at(-1);
    return value ? readElement(value.contents).contents : undefined;
  }
  return undefined;
}

/**
 * A leaf certificate signed by an Ed25519 CA (PEM pair, the key in any form keys.ts reads), with a fresh
 * Ed25519 key: as certificates.ts's issueCertificate makes it (KeyUsage, ExtKeyUsage, the CA's key id, SANs).
 */
export async function issueEd25519Certificate(
  ca: { certPem: string | Buffer; keyPem: string | Buffer },
  options: Ed25519IssueOptions,
): Promise<Ed25519Issued> {
  const caKey = parsePrivateKeyPem(ca.keyPem);
  const issuer = issuerFields(ca.certPem);
  if (!issuer.spki.equals(spkiOf(caKey))) throw new InvalidInputError("private key does not match the certificate");
  const key = options.key ?? (await generateKeyPair("ed25519"));
  const extensions = [extension(OID.keyUsage, true, keyUsageValue(options.keyUsage))];
  if (options.extKeyUsage.length > 0)
    extensions.push(extension(OID.extKeyUsage, false, sequence(...options.extKeyUsage.map((u) => oid(OID[u])))));
  if (issuer.subjectKeyId)
    extensions.push(extension(OID.authorityKeyId, false, sequence(implicitPrimitive(0, issuer.subjectKeyId))));
  const dnsNames = options.dnsNames ?? [];
  const ipAddresses = options.ipAddresses ?? [];
  if (dnsNames.length + ipAddresses.length > 0)
    extensions.push(extension(OID.subjectAltName, false, subjectAltNames(dnsNames, ipAddresses)));
  const tbs = tbsCertificate({
    serial: options.serial ?? randomBytes(16),
    issuer: issuer.subject,
    subject: name(options),
    notBefore: truncateToSeconds(options.now ?? new Date()),
    lifetimeMs: options.lifetimeMs,
    spki: spkiOf(key),
    extensions,
  });
  return { certPem: signed(tbs, caKey), keyPem: privateKeyToPem(key), key };
}
