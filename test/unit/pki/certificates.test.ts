import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import * as x509 from "@peculiar/x509";
import { InvalidInputError } from "../../../agent/src/errors.js";
import {
  caLifetimeMs,
  clientCertLifetimeMs,
  generateSelfSignedCA,
  issueCertificate,
  loadCertificateAndKey,
  splitSANs,
} from "../../../agent/src/pki/index.js";
import { fixtureSecrets, fromBase64 } from "./fixtures.js";

const serverAuth = "1.3.6.1.5.5.7.3.1";
const clientAuth = "1.3.6.1.5.5.7.3.2";

function keyUsageFlags(pem: string): number {
  const ext = new x509.X509Certificate(pem).getExtension(x509.KeyUsagesExtension);
  assert.ok(ext, "KeyUsage extension present");
  assert.equal(ext.critical, true);
  return ext.usages;
}

function serialBits(cert: X509Certificate): number {
  return BigInt("0x" + cert.serialNumber).toString(2).length;
}

test("self-signed CA: IsCA, certSign+digitalSignature, serverAuth+clientAuth, 10 years, O=talos", async () => {
  const now = new Date("2026-01-02T03:04:05.678Z");
  const ca = await generateSelfSignedCA({ organizations: ["talos"], now });
  const cert = new X509Certificate(ca.certPem);
  assert.equal(cert.ca, true);
  assert.equal(cert.subject, "O=talos");
  assert.equal(cert.issuer, "O=talos");
  assert.deepEqual(cert.keyUsage, [serverAuth, clientAuth]);
  assert.equal(keyUsageFlags(ca.certPem), x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign);
  assert.equal(cert.validFromDate.toISOString(), "2026-01-02T03:04:05.000Z");
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), caLifetimeMs);
  assert.equal(caLifetimeMs, 87600 * 3600 * 1000);
  assert.ok(cert.verify(cert.publicKey), "self-signature verifies");
  assert.equal(cert.publicKey.asymmetricKeyType, "ed25519");
  assert.match(ca.keyPem, /^-----BEGIN ED25519 PRIVATE KEY-----\n/);
  assert.ok(serialBits(cert) <= 128);
});

test("ECDSA CA signs with ECDSA-SHA256 and writes an EC PRIVATE KEY", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  const parsed = new x509.X509Certificate(ca.certPem);
  const algorithm = parsed.signatureAlgorithm as unknown as { name: string; hash?: { name: string } };
  assert.equal(algorithm.name, "ECDSA");
  assert.equal(algorithm.hash?.name, "SHA-256");
  assert.match(ca.keyPem, /^-----BEGIN EC PRIVATE KEY-----\n/);
  assert.equal(new X509Certificate(ca.certPem).publicKey.asymmetricKeyDetails?.namedCurve, "prime256v1");
});

test("serials are random and differ between certificates", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const serials = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const leaf = await issueCertificate(ca, { extKeyUsage: ["clientAuth"], lifetimeMs: 3600_000 });
    serials.add(new X509Certificate(leaf.certPem).serialNumber);
  }
  assert.equal(serials.size, 5);
});

test("client certificate: O=os:admin, no CN, clientAuth only, 1 year, signed by the CA", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const leaf = await issueCertificate(ca, {
    organizations: ["os:admin"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: clientCertLifetimeMs,
  });
  const cert = new X509Certificate(leaf.certPem);
  assert.equal(cert.subject, "O=os:admin");
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, [clientAuth]);
  assert.equal(keyUsageFlags(leaf.certPem), x509.KeyUsageFlags.digitalSignature);
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), 8760 * 3600 * 1000);
  assert.ok(cert.checkIssued(new X509Certificate(ca.certPem)));
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  assert.equal(cert.publicKey.asymmetricKeyType, "ed25519");
});

test("several roles land in O; SANs split into DNS and IP", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const sans = splitSANs(["node-1", "10.5.0.2", "fd00::1", "node-1.example.org"]);
  assert.deepEqual(sans, { dnsNames: ["node-1", "node-1.example.org"], ipAddresses: ["10.5.0.2", "fd00::1"] });
  const leaf = await issueCertificate(ca, {
    commonName: "node-1",
    organizations: ["os:reader", "os:operator"],
    ...sans,
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 24 * 3600_000,
  });
  const parsed = new x509.X509Certificate(leaf.certPem);
  assert.deepEqual(parsed.subjectName.getField("O"), ["os:reader", "os:operator"]);
  assert.deepEqual(parsed.subjectName.getField("CN"), ["node-1"]);
  const cert = new X509Certificate(leaf.certPem);
  assert.equal(
    cert.subjectAltName,
    "DNS:node-1, DNS:node-1.example.org, IP Address:10.5.0.2, IP Address:FD00:0:0:0:0:0:0:1",
  );
  assert.deepEqual(cert.keyUsage, [serverAuth]);
});

test("invalid IP SAN is refused", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  await assert.rejects(
    issueCertificate(ca, { ipAddresses: ["not-an-ip"], extKeyUsage: ["serverAuth"], lifetimeMs: 1000 }),
    InvalidInputError,
  );
});

test("a CA loaded from the fixture bundle (Ed25519 and ECDSA keys as Talos wrote them) issues verifiable certs", async () => {
  const secrets = fixtureSecrets();
  for (const name of ["os", "k8s"] as const) {
    const ca = await loadCertificateAndKey(fromBase64(secrets.certs[name].crt), fromBase64(secrets.certs[name].key));
    const leaf = await issueCertificate(ca, { commonName: "x", extKeyUsage: ["serverAuth"], lifetimeMs: 3600_000 });
    const caCert = new X509Certificate(ca.certPem);
    assert.ok(new X509Certificate(leaf.certPem).verify(caCert.publicKey), name);
  }
});
