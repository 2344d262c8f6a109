import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import * as x509 from "@peculiar/x509";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { createCSR, decodePemBlocks, encodePem, generateSelfSignedCA, signCSR } from "../../../agent/src/pki/index.js";

test("CSR carries subject and SANs under the CERTIFICATE REQUEST label", async () => {
  const { csrPem, keyPem } = await createCSR({
    commonName: "worker-1",
    dnsNames: ["worker-1"],
    ipAddresses: ["10.5.0.3"],
  });
  assert.equal(decodePemBlocks(csrPem)[0]?.label, "CERTIFICATE REQUEST");
  assert.match(keyPem, /^-----BEGIN ED25519 PRIVATE KEY-----/);
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  assert.deepEqual(csr.subjectName.getField("CN"), ["worker-1"]);
  assert.ok(await csr.verify());
});

test("signCSR follows trustd's rules: O dropped, SANs copied, serverAuth only, 24 h, not a CA", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const now = new Date("2026-05-06T07:08:09Z");
  const { csrPem, key } = await createCSR({
    commonName: "worker-1",
    organizations: ["os:admin", "os:impersonator"],
    dnsNames: ["worker-1", "worker-1.local"],
    ipAddresses: ["10.5.0.3", "fd00::3"],
  });
  const { certPem } = await signCSR(ca, csrPem, { now });
  const cert = new X509Certificate(certPem);
  assert.equal(cert.subject, "CN=worker-1", "Organization removed");
  assert.equal(cert.issuer, "O=talos");
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1"]);
  assert.equal(
    new x509.X509Certificate(certPem).getExtension(x509.KeyUsagesExtension)?.usages,
    x509.KeyUsageFlags.digitalSignature,
  );
  assert.equal(
    cert.subjectAltName,
    "DNS:worker-1, DNS:worker-1.local, IP Address:10.5.0.3, IP Address:FD00:0:0:0:0:0:0:3",
  );
  assert.equal(cert.validFromDate.toISOString(), now.toISOString());
  assert.equal(cert.validToDate.getTime() - now.getTime(), 24 * 3600 * 1000);
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  // The certificate is for the CSR's key.
  assert.deepEqual(
    cert.publicKey.export({ format: "der", type: "spki" }),
    key.publicKey.export({ format: "der", type: "spki" }),
  );
});

test("a CSR with only O yields an empty subject", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const { csrPem } = await createCSR({ organizations: ["os:admin"] });
  const { certPem } = await signCSR(ca, csrPem);
  assert.deepEqual(new x509.X509Certificate(certPem).subjectName.toJSON(), []);
});

test("malformed, mislabelled and tampered CSRs are InvalidInputError", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  await assert.rejects(signCSR(ca, "garbage"), InvalidInputError);
  await assert.rejects(signCSR(ca, encodePem("CERTIFICATE REQUEST", Buffer.from("nonsense"))), InvalidInputError);
  await assert.rejects(signCSR(ca, ca.certPem), InvalidInputError);

  const { csrPem } = await createCSR({ commonName: "worker-1" });
  const der = decodePemBlocks(csrPem)[0]!.der;
  // Flip one byte inside the signature (the last bytes of the DER).
  der[der.length - 5] = (der[der.length - 5] ?? 0) ^ 0xff;
  await assert.rejects(signCSR(ca, encodePem("CERTIFICATE REQUEST", der)), InvalidInputError);
});

test("signCSR with keepOrganization and clientAuth (offline admin signing) keeps the roles", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const { csrPem } = await createCSR({ organizations: ["os:reader"], ipAddresses: ["127.0.0.1"] });
  const { certPem } = await signCSR(ca, csrPem, {
    keepOrganization: true,
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3600_000,
  });
  const cert = new X509Certificate(certPem);
  assert.equal(cert.subject, "O=os:reader");
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), 3600_000);
});
