// Private keys in the three algorithms Talos uses, and their PEM encodings as
// Talos writes them: Ed25519 as PKCS#8 under `ED25519 PRIVATE KEY`, ECDSA P-256
// as SEC1 under `EC PRIVATE KEY`, RSA as PKCS#1 under `RSA PRIVATE KEY`.
// node:crypto KeyObjects hold the keys; WebCrypto keys are derived on demand for
// @peculiar/x509, which signs through WebCrypto.
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateNodeKeyPair,
  KeyObject,
  webcrypto,
} from "node:crypto";
import { promisify } from "node:util";
import { InvalidInputError } from "../errors.js";
import { decodePem, encodePem, PemLabel } from "./pem.js";

export type KeyAlgorithm = "ed25519" | "ecdsa-p256" | "rsa";

export interface KeyPair {
  algorithm: KeyAlgorithm;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** RSA size of the v1.7 service-account key. */
export const defaultRsaBits = 4096;

const generate = promisify(generateNodeKeyPair);

export async function generateKeyPair(algorithm: KeyAlgorithm, options: { rsaBits?: number } = {}): Promise<KeyPair> {
  switch (algorithm) {
    case "ed25519": {
      const { privateKey, publicKey } = await generate("ed25519");
      return { algorithm, privateKey, publicKey };
    }
    case "ecdsa-p256": {
      const { privateKey, publicKey } = await generate("ec", { namedCurve: "P-256" });
      return { algorithm, privateKey, publicKey };
    }
    case "rsa": {
      const { privateKey, publicKey } = await generate("rsa", { modulusLength: options.rsaBits ?? defaultRsaBits });
      return { algorithm, privateKey, publicKey };
    }
  }
}

/** Which of our algorithms a node KeyObject holds; throws for anything else (e.g. P-384). */
export function keyAlgorithmOf(key: KeyObject): KeyAlgorithm {
  switch (key.asymmetricKeyType) {
    case "ed25519":
      return "ed25519";
    case "rsa":
      return "rsa";
    case "ec":
      if (key.asymmetricKeyDetails?.namedCurve === "prime256v1") return "ecdsa-p256";
      throw new InvalidInputError(`unsupported EC curve ${key.asymmetricKeyDetails?.namedCurve ?? "unknown"}`);
    default:
      throw new InvalidInputError(`unsupported key type ${key.asymmetricKeyType ?? "unknown"}`);
  }
}

export function keyPairFromPrivateKey(privateKey: KeyObject): KeyPair {
  return { algorithm: keyAlgorithmOf(privateKey), privateKey, publicKey: createPublicKey(privateKey) };
}

/** PEM of the private key in the format Talos writes for its algorithm. */
export function privateKeyToPem(key: KeyPair): string {
  switch (key.algorithm) {
    case "ed25519":
      return encodePem(PemLabel.ed25519PrivateKey, key.privateKey.export({ format: "der", type: "pkcs8" }));
    case "ecdsa-p256":
      return encodePem(PemLabel.ecPrivateKey, key.privateKey.export({ format: "der", type: "sec1" }));
    case "rsa":
      return encodePem(PemLabel.rsaPrivateKey, key.privateKey.export({ format: "der", type: "pkcs1" }));
  }
}

/** PKCS#8 PEM under the generic `PRIVATE KEY` label (what OpenSSL and node:tls read for every algorithm). */
export function privateKeyToPkcs8Pem(key: KeyPair): string {
  return encodePem(PemLabel.privateKey, key.privateKey.export({ format: "der", type: "pkcs8" }));
}

export function publicKeyToPem(key: KeyPair): string {
  return encodePem(PemLabel.publicKey, key.publicKey.export({ format: "der", type: "spki" }));
}

/**
 * The public half as Talos writes it next to a private key (the service-account
 * `.pub`): PKIX under `EC PUBLIC KEY`, `ED25519 PUBLIC KEY` or, for RSA, `PUBLIC KEY`.
 */
export function talosPublicKeyPem(key: KeyPair): string {
  const label =
    key.algorithm === "ecdsa-p256"
      ? PemLabel.ecPublicKey
      : key.algorithm === "ed25519"
        ? PemLabel.ed25519PublicKey
        : PemLabel.publicKey;
  return encodePem(label, key.publicKey.export({ format: "der", type: "spki" }));
}

/**
 * Loads a private key from any of the PEM forms Talos writes (or has written):
 * `ED25519 PRIVATE KEY` and `PRIVATE KEY` (PKCS#8), `EC PRIVATE KEY` (SEC1),
 * `RSA PRIVATE KEY` (PKCS#1).
 */
export function parsePrivateKeyPem(pem: string | Buffer): KeyPair {
  const block = decodePem(pem, [
    PemLabel.ed25519PrivateKey,
    PemLabel.privateKey,
    PemLabel.ecPrivateKey,
    PemLabel.rsaPrivateKey,
  ]);
  const type =
    block.label === PemLabel.ecPrivateKey ? "sec1" : block.label === PemLabel.rsaPrivateKey ? "pkcs1" : "pkcs8";
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: block.der, format: "der", type });
  } catch (err) {
    throw new InvalidInputError(`failed to parse ${block.label}`, {}, { cause: err });
  }
  const pair = keyPairFromPrivateKey(privateKey);
  if (block.label === PemLabel.ed25519PrivateKey && pair.algorithm !== "ed25519") {
    throw new InvalidInputError(`PEM block ED25519 PRIVATE KEY holds a ${pair.algorithm} key`);
  }
  return pair;
}

// WebCrypto import parameters per algorithm (RSA keys only ever sign with SHA-256 here).
const importParams: Record<
  KeyAlgorithm,
  webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams | webcrypto.Algorithm
> = {
  ed25519: { name: "Ed25519" },
  "ecdsa-p256": { name: "ECDSA", namedCurve: "P-256" },
  rsa: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
};

/** The signature algorithm a certificate signed by this key uses (ECDSA-SHA256 for P-256, as Go does). */
export function signingAlgorithmFor(algorithm: KeyAlgorithm): webcrypto.Algorithm | webcrypto.EcdsaParams {
  switch (algorithm) {
    case "ed25519":
      return { name: "Ed25519" };
    case "ecdsa-p256":
      return { name: "ECDSA", hash: "SHA-256" } as webcrypto.EcdsaParams;
    case "rsa":
      return { name: "RSASSA-PKCS1-v1_5" };
  }
}

const cryptoKeyCache = new WeakMap<KeyPair, Promise<webcrypto.CryptoKeyPair>>();

/** WebCrypto views of the key pair (cached per KeyPair object). */
export function webCryptoKeys(key: KeyPair): Promise<webcrypto.CryptoKeyPair> {
  let cached = cryptoKeyCache.get(key);
  if (!cached) {
    const params = importParams[key.algorithm];
    cached = Promise.all([
      webcrypto.subtle.importKey("pkcs8", key.privateKey.export({ format: "der", type: "pkcs8" }), params, true, [
        "sign",
      ]),
      webcrypto.subtle.importKey("spki", key.publicKey.export({ format: "der", type: "spki" }), params, true, [
        "verify",
      ]),
    ]).then(([privateKey, publicKey]) => ({ privateKey, publicKey }));
    cryptoKeyCache.set(key, cached);
  }
  return cached;
}
