import assert from "node:assert/strict";
import { createHash, X509Certificate } from "node:crypto";
import { test } from "node:test";
import { generateSelfSignedCA, issueCertificate, spkiFingerprint } from "../../../agent/src/pki/index.js";
import { fixtureSecrets, fromBase64 } from "./fixtures.js";

test("spkiFingerprint is base64(SHA-256(SubjectPublicKeyInfo))", async () => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const leaf = await issueCertificate(ca, {
    commonName: "maintenance-service.talos.dev",
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 1000,
  });
  const spki = new X509Certificate(leaf.certPem).publicKey.export({ format: "der", type: "spki" });
  const expected = createHash("sha256").update(spki).digest("base64");
  assert.equal(spkiFingerprint(leaf.certPem), expected);
  assert.equal(expected.length, 44);
  assert.notEqual(spkiFingerprint(ca.certPem), expected);
});

test("fingerprint of a fixture certificate (ECDSA)", () => {
  const pem = fromBase64(fixtureSecrets().certs.k8s.crt);
  const spki = new X509Certificate(pem).publicKey.export({ format: "der", type: "spki" });
  assert.equal(spkiFingerprint(pem), createHash("sha256").update(spki).digest("base64"));
});
