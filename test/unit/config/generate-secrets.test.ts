import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import * as x509 from "@peculiar/x509";
import { parse } from "yaml";
import { InvalidInputError } from "../../../agent/src/errors.js";
import {
  generateSecretsBundle,
  loadSecretsBundle,
  secretsBundleToYaml,
  tokenPattern,
  type SecretsBundle,
} from "../../../agent/src/config/generate/index.js";
import { decodePemBlocks, parsePrivateKeyPem } from "../../../agent/src/pki/index.js";
import { readFixture } from "../pki/fixtures.js";

const serverAuth = "1.3.6.1.5.5.7.3.1";
const clientAuth = "1.3.6.1.5.5.7.3.2";
const tenYearsMs = 87600 * 3600 * 1000;

// One bundle for the whole file: RSA 4096 generation takes a second or two.
let generated: Promise<SecretsBundle> | undefined;
const now = new Date("2026-03-04T05:06:07Z");
function bundle(): Promise<SecretsBundle> {
  generated ??= generateSecretsBundle(now);
  return generated;
}

test("fixture secrets bundle loads and re-serializes to the same text", () => {
  const text = readFixture("generate/secrets/secrets.yaml");
  const loaded = loadSecretsBundle(text);
  assert.equal(loaded.trustdInfo.token, "oamejv.9tk1nhuwnlc2nghf");
  assert.equal(loaded.secrets.bootstrapToken, "2psnp2.lry8e9gycdix3bpa");
  assert.match(loaded.certs.os.key, /^-----BEGIN ED25519 PRIVATE KEY-----\n/);
  assert.equal(secretsBundleToYaml(loaded), text);
});

test("generated bundle round-trips through YAML", async () => {
  const b = await bundle();
  const again = loadSecretsBundle(secretsBundleToYaml(b));
  assert.deepEqual(again, b);
  const keys = Object.keys(parse(secretsBundleToYaml(b)) as object);
  assert.deepEqual(keys, ["cluster", "secrets", "trustdinfo", "certs"]);
});

test("tokens, ids and secrets have gen secrets' formats", async () => {
  const b = await bundle();
  assert.match(b.trustdInfo.token, tokenPattern);
  assert.match(b.secrets.bootstrapToken, tokenPattern);
  assert.notEqual(b.trustdInfo.token, b.secrets.bootstrapToken);
  assert.match(b.cluster.id, /^[A-Za-z0-9_-]{43}=$/);
  assert.equal(Buffer.from(b.cluster.id, "base64url").length, 32);
  for (const s of [b.cluster.secret, b.secrets.secretboxEncryptionSecret]) {
    assert.match(s, /^[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(s, "base64").length, 32);
  }
});

function checkCA(
  pair: { crt: string; key: string },
  expect: { subject: string; keyLabel: string; keyType: string; sig: string },
) {
  const cert = new X509Certificate(pair.crt);
  assert.equal(cert.subject, expect.subject);
  assert.equal(cert.ca, true);
  assert.deepEqual(cert.keyUsage, [serverAuth, clientAuth]);
  const parsed = new x509.X509Certificate(pair.crt);
  assert.equal(
    parsed.getExtension(x509.KeyUsagesExtension)?.usages,
    x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature,
  );
  assert.equal(parsed.getExtension(x509.BasicConstraintsExtension)?.ca, true);
  assert.equal((parsed.signatureAlgorithm as unknown as { name: string }).name, expect.sig);
  assert.equal(cert.validFromDate.toISOString(), now.toISOString());
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), tenYearsMs);
  assert.equal(decodePemBlocks(pair.key)[0]?.label, expect.keyLabel);
  assert.equal(parsePrivateKeyPem(pair.key).privateKey.asymmetricKeyType, expect.keyType);
  assert.ok(cert.verify(cert.publicKey));
}

test("CAs and keys are as reference §6 says", async () => {
  const b = await bundle();
  checkCA(b.certs.os, { subject: "O=talos", keyLabel: "ED25519 PRIVATE KEY", keyType: "ed25519", sig: "Ed25519" });
  checkCA(b.certs.k8s, { subject: "O=kubernetes", keyLabel: "EC PRIVATE KEY", keyType: "ec", sig: "ECDSA" });
  checkCA(b.certs.etcd, { subject: "O=etcd", keyLabel: "EC PRIVATE KEY", keyType: "ec", sig: "ECDSA" });
  checkCA(b.certs.k8sAggregator, {
    subject: "CN=front-proxy",
    keyLabel: "EC PRIVATE KEY",
    keyType: "ec",
    sig: "ECDSA",
  });
  const sa = parsePrivateKeyPem(b.certs.k8sServiceAccount.key);
  assert.equal(decodePemBlocks(b.certs.k8sServiceAccount.key)[0]?.label, "RSA PRIVATE KEY");
  assert.equal(sa.algorithm, "rsa");
  assert.equal(sa.privateKey.asymmetricKeyDetails?.modulusLength, 4096);
});

test("loadSecretsBundle reports every problem at once", () => {
  const fixture = parse(readFixture("generate/secrets/secrets.yaml")) as Record<string, Record<string, unknown>>;
  delete fixture.trustdinfo;
  delete (fixture.secrets as Record<string, unknown>).bootstraptoken;
  // Swap the OS key for the Kubernetes one: parses, but does not match the OS certificate.
  (fixture.certs!.os as Record<string, unknown>).key = (fixture.certs!.k8s as Record<string, unknown>).key;
  const text = JSON.stringify(fixture);
  assert.throws(
    () => loadSecretsBundle(text),
    (err: unknown) => {
      assert.ok(err instanceof InvalidInputError);
      const problems = err.fields.problems as string[];
      assert.deepEqual(problems, [
        "secrets.bootstraptoken: missing or not a string",
        "trustdinfo.token: missing or not a string",
        "certs.os: private key does not match the certificate",
      ]);
      return true;
    },
  );
  assert.throws(() => loadSecretsBundle("- a\n- b\n"), InvalidInputError);
  assert.throws(() => loadSecretsBundle("certs: [unclosed"), InvalidInputError);
});
