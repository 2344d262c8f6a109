import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { createCSR, generateSelfSignedCA, hourMs } from "../../../agent/src/pki/index.js";
import { SigningFailedError, signWorkerCSR } from "../../../agent/src/trustd/sign.js";

async function root() {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const old = await generateSelfSignedCA({ organizations: ["talos"] });
  return {
    ca,
    spec: { issuingCA: { crt: ca.certPem, key: ca.keyPem }, acceptedCAs: [{ crt: old.certPem }, { crt: ca.certPem }] },
  };
}

test("a CSR is signed as trustd signs it: Organization dropped, SANs copied, serverAuth only, 24 h, not a CA", async () => {
  const { ca, spec } = await root();
  const { csrPem } = await createCSR({
    commonName: "worker-1",
    organizations: ["os:admin"],
    dnsNames: ["worker-1", "worker-1.lan"],
    ipAddresses: ["10.5.0.7", "fd00::7"],
  });
  const before = Date.now();
  const signed = await signWorkerCSR(spec, Buffer.from(csrPem));
  const after = Date.now();
  const cert = new X509Certificate(signed.crt);
  assert.equal(cert.subject, "CN=worker-1");
  assert.equal(cert.issuer, new X509Certificate(ca.certPem).subject);
  assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  assert.equal(
    cert.subjectAltName,
    "DNS:worker-1, DNS:worker-1.lan, IP Address:10.5.0.7, IP Address:FD00:0:0:0:0:0:0:7",
  );
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.1"]);
  assert.equal(cert.ca, false);
  const lifetime = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
  assert.equal(lifetime, 24 * hourMs);
  // Signed now, to the second (the signing may cross into the next second).
  const validFrom = Date.parse(cert.validFrom);
  assert.ok(
    validFrom >= Math.floor(before / 1000) * 1000 && validFrom <= after,
    `validFrom ${cert.validFrom} within the call`,
  );
  assert.equal(signed.issued.droppedOrganization, true);
  assert.deepEqual(signed.issued.ipAddresses, ["10.5.0.7", "fd00::7"]);
  // Every accepted CA, concatenated, as the response's `ca`.
  assert.equal(signed.ca, spec.acceptedCAs.map((c) => c.crt).join(""));
});

test("garbage is InvalidArgument with Talos's wording; a CA without key fails signing (Internal)", async () => {
  const { spec } = await root();
  await assert.rejects(
    signWorkerCSR(spec, Buffer.from("not pem at all")),
    (err: unknown) => err instanceof InvalidInputError && err.message === "failed to decode CSR",
  );
  const badBody = "-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3Ny\n-----END CERTIFICATE REQUEST-----\n";
  await assert.rejects(
    signWorkerCSR(spec, Buffer.from(badBody)),
    (err: unknown) => err instanceof InvalidInputError && /^failed to parse CSR: /.test(err.message),
  );
  const { csrPem } = await createCSR({ commonName: "w" });
  await assert.rejects(
    signWorkerCSR({ acceptedCAs: spec.acceptedCAs }, Buffer.from(csrPem)),
    (err: unknown) => err instanceof SigningFailedError && /^failed to sign CSR: /.test(err.message),
  );
});
