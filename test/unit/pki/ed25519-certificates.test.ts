import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { children, readElement } from "../../../agent/src/pki/der.js";
import { generateEd25519CA, issueEd25519Certificate } from "../../../agent/src/pki/ed25519-certificates.js";
import {
  generateKeyPair,
  generateSelfSignedCA,
  issueCertificate,
  loadCertificateAndKey,
} from "../../../agent/src/pki/index.js";

// Ed25519 signatures are deterministic: with the same key, serial and time, the certificate built
// without @peculiar/x509 must be the very bytes the library's path (certificates.ts) produced.
const now = new Date("2026-11-25T08:32:02.345Z");
const serialOf = (pem: string) => Buffer.from(new X509Certificate(pem).serialNumber, "hex");

test("the maintenance CA is the bytes certificates.ts makes for the same key, serial and time", async () => {
  const key = await generateKeyPair("ed25519");
  const reference = await generateSelfSignedCA({ organizations: ["talos"], key, now, lifetimeMs: 87600 * 3600_000 });
  const ours = await generateEd25519CA({
    organizations: ["talos"],
    key,
    now,
    lifetimeMs: 87600 * 3600_000,
    serial: serialOf(reference.certPem),
  });
  assert.equal(ours.certPem, reference.certPem);
  assert.equal(ours.keyPem, reference.keyPem);
});

test("server and client certificates are the bytes certificates.ts issues (SANs v4 and v6, key usages, AKI, O with a colon)", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"], now });
  const cases = [
    {
      commonName: "maintenance-service.talos.dev",
      dnsNames: ["talos-abc", "talos-abc.example.org"],
      ipAddresses: ["10.0.2.15", "127.0.0.1", "::1", "fec0::5054:ff:fe12:3456"],
      extKeyUsage: ["serverAuth" as const],
      keyUsage: ["digitalSignature" as const],
    },
    {
      commonName: "node.cluster.local",
      ipAddresses: ["fd00:1:2:3:4:5:6:7"],
      extKeyUsage: ["serverAuth" as const],
      keyUsage: ["digitalSignature" as const, "keyEncipherment" as const],
    },
    {
      commonName: "node.cluster.local",
      organizations: ["os:impersonator"],
      extKeyUsage: ["clientAuth" as const],
      keyUsage: ["digitalSignature" as const],
    },
  ];
  for (const c of cases) {
    const key = await generateKeyPair("ed25519");
    const reference = await issueCertificate(ca, { ...c, key, now, lifetimeMs: 24 * 3600_000 });
    const ours = await issueEd25519Certificate(
      { certPem: ca.certPem, keyPem: ca.keyPem },
      { ...c, key, now, lifetimeMs: 24 * 3600_000, serial: serialOf(reference.certPem) },
    );
    assert.equal(ours.certPem, reference.certPem, JSON.stringify(c));
    assert.equal(ours.keyPem, reference.keyPem);
  }
});

/** The serial's INTEGER as encoded: tbsCertificate's second field. */
const serialField = (pem: string) =>
  children(children(readElement(new X509Certificate(pem).raw))[0]!)[1]!.encoded.toString("hex");

test("a serial with leading zero bytes or its high bit set is a minimal positive INTEGER", async () => {
  const ca = await generateEd25519CA({
    organizations: ["talos"],
    lifetimeMs: 3600_000,
    serial: Buffer.from("0000ff" + "11".repeat(13), "hex"),
  });
  assert.equal(serialField(ca.certPem), "020f00ff" + "11".repeat(13));
  const leaf = await issueEd25519Certificate(ca, {
    extKeyUsage: ["serverAuth"],
    keyUsage: ["digitalSignature"],
    lifetimeMs: 3600_000,
    serial: Buffer.from("7f" + "22".repeat(15), "hex"),
  });
  assert.equal(serialField(leaf.certPem), "02107f" + "22".repeat(15));
});

test("IPv6 SANs in every written form: compressed, full, with a dotted IPv4 tail", async () => {
  const ca = await generateEd25519CA({ organizations: ["talos"], lifetimeMs: 3600_000 });
  const ipAddresses = ["::", "::1", "fe80::1", "2001:db8:0:0:1:0:0:1", "::ffff:192.0.2.1", "2001:db8::ffff:192.0.2.1"];
  const leaf = await issueEd25519Certificate(ca, {
    ipAddresses,
    extKeyUsage: ["serverAuth"],
    keyUsage: ["digitalSignature"],
    lifetimeMs: 3600_000,
  });
  assert.equal(
    new X509Certificate(leaf.certPem).subjectAltName,
    [
      "0:0:0:0:0:0:0:0",
      "0:0:0:0:0:0:0:1",
      "FE80:0:0:0:0:0:0:1",
      "2001:DB8:0:0:1:0:0:1",
      "0:0:0:0:0:FFFF:C000:201",
      "2001:DB8:0:0:0:FFFF:C000:201",
    ]
      .map((a) => `IP Address:${a}`)
      .join(", "),
  );
});

test("issued certificates verify against the CA and load back with their keys", async () => {
  const ca = await generateEd25519CA({ organizations: ["talos"], lifetimeMs: 3600_000 });
  const caCert = new X509Certificate(ca.certPem);
  assert.equal(caCert.ca, true);
  assert.ok(caCert.verify(caCert.publicKey));
  const leaf = await issueEd25519Certificate(ca, {
    commonName: "maintenance-service.talos.dev",
    ipAddresses: ["10.0.2.15"],
    extKeyUsage: ["serverAuth"],
    keyUsage: ["digitalSignature"],
    lifetimeMs: 3600_000,
  });
  const cert = new X509Certificate(leaf.certPem);
  assert.ok(cert.checkIssued(caCert));
  assert.ok(cert.verify(caCert.publicKey));
  assert.equal(cert.subjectAltName, "IP Address:10.0.2.15");
  await loadCertificateAndKey(leaf.certPem, leaf.keyPem);
});

test("a CA key that is not the certificate's, or not Ed25519, is refused", async () => {
  const ca = await generateEd25519CA({ organizations: ["talos"], lifetimeMs: 3600_000 });
  const other = await generateEd25519CA({ organizations: ["talos"], lifetimeMs: 3600_000 });
  const opts = { extKeyUsage: ["serverAuth" as const], keyUsage: ["digitalSignature" as const], lifetimeMs: 3600_000 };
  await assert.rejects(issueEd25519Certificate({ certPem: ca.certPem, keyPem: other.keyPem }, opts), InvalidInputError);
  const ecdsa = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  await assert.rejects(issueEd25519Certificate(ecdsa, opts), InvalidInputError);
  await assert.rejects(issueEd25519Certificate(ca, { ...opts, ipAddresses: ["10.0.2"] }), InvalidInputError);
});
