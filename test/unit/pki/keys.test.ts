import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import {
  decodePemBlocks,
  encodePem,
  generateKeyPair,
  loadCertificateAndKey,
  parsePrivateKeyPem,
  privateKeyToPem,
  type KeyAlgorithm,
} from "../../../agent/src/pki/index.js";
import { fixtureSecrets, fromBase64 } from "./fixtures.js";

const labels: Record<KeyAlgorithm, string> = {
  ed25519: "ED25519 PRIVATE KEY",
  "ecdsa-p256": "EC PRIVATE KEY",
  rsa: "RSA PRIVATE KEY",
};

for (const algorithm of ["ed25519", "ecdsa-p256", "rsa"] as const) {
  test(`${algorithm} key PEM uses Talos's label and round-trips`, async () => {
    // 1024-bit RSA keeps the test fast; the format does not depend on the size.
    const key = await generateKeyPair(algorithm, { rsaBits: 1024 });
    const pem = privateKeyToPem(key);
    const [block] = decodePemBlocks(pem);
    assert.equal(block?.label, labels[algorithm]);
    const back = parsePrivateKeyPem(pem);
    assert.equal(back.algorithm, algorithm);
    assert.deepEqual(
      back.publicKey.export({ format: "der", type: "spki" }),
      key.publicKey.export({ format: "der", type: "spki" }),
    );
    assert.equal(privateKeyToPem(back), pem);
  });
}

test("Ed25519 PEM body is PKCS#8 (the 48-byte form Go writes)", async () => {
  const key = await generateKeyPair("ed25519");
  const [block] = decodePemBlocks(privateKeyToPem(key));
  assert.equal(block?.der.length, 48);
  // PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112 } ... }
  assert.equal(block?.der.subarray(0, 16).toString("hex"), "302e020100300506032b657004220420");
});

test("service-account RSA key defaults to 4096 bits", async () => {
  const key = await generateKeyPair("rsa");
  assert.equal(key.privateKey.asymmetricKeyDetails?.modulusLength, 4096);
});

test("fixture secrets-bundle keys parse and re-encode byte for byte", () => {
  const secrets = fixtureSecrets();
  const cases: [string, string, KeyAlgorithm][] = [
    ["os", secrets.certs.os.key, "ed25519"],
    ["etcd", secrets.certs.etcd.key, "ecdsa-p256"],
    ["k8s", secrets.certs.k8s.key, "ecdsa-p256"],
    ["k8saggregator", secrets.certs.k8saggregator.key, "ecdsa-p256"],
    // Bundles from before the v1.7 contract carry an ECDSA service-account key.
    ["k8sserviceaccount", secrets.certs.k8sserviceaccount.key, "ecdsa-p256"],
  ];
  for (const [name, b64, algorithm] of cases) {
    const pem = fromBase64(b64);
    const key = parsePrivateKeyPem(pem);
    assert.equal(key.algorithm, algorithm, name);
    assert.equal(privateKeyToPem(key), pem, `${name} re-encodes identically`);
  }
});

test("fixture CA certificates load with their keys", async () => {
  const secrets = fixtureSecrets();
  for (const name of ["os", "etcd", "k8s", "k8saggregator"] as const) {
    const ca = await loadCertificateAndKey(fromBase64(secrets.certs[name].crt), fromBase64(secrets.certs[name].key));
    assert.ok(ca.cert.subject !== undefined, name);
  }
  await assert.rejects(
    loadCertificateAndKey(fromBase64(secrets.certs.os.crt), fromBase64(secrets.certs.k8s.key)),
    InvalidInputError,
  );
});

test("generic PKCS#8 PRIVATE KEY is accepted too", async () => {
  const key = await generateKeyPair("ecdsa-p256");
  const pem = encodePem("PRIVATE KEY", key.privateKey.export({ format: "der", type: "pkcs8" }));
  assert.equal(parsePrivateKeyPem(pem).algorithm, "ecdsa-p256");
});

test("mislabelled or unknown key PEM is rejected", async () => {
  const ec = await generateKeyPair("ecdsa-p256");
  const mislabelled = encodePem("ED25519 PRIVATE KEY", ec.privateKey.export({ format: "der", type: "pkcs8" }));
  assert.throws(() => parsePrivateKeyPem(mislabelled), InvalidInputError);
  assert.throws(() => parsePrivateKeyPem(encodePem("OPENSSH PRIVATE KEY", Buffer.from("x"))), InvalidInputError);
  assert.throws(() => parsePrivateKeyPem(encodePem("EC PRIVATE KEY", Buffer.from("garbage"))), InvalidInputError);
  assert.throws(() => parsePrivateKeyPem("not pem"), InvalidInputError);
});
