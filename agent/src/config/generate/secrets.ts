// The secrets bundle: everything cluster-wide that `gen config` puts into the
// machine configs (reference §6), in memory as PEM text and on disk in the shape
// of `talosctl gen secrets` output (lower-case keys, base64 of the PEM blocks).
import { parseAllDocuments, stringify } from "yaml";
import { InvalidInputError } from "../../errors.js";
import {
  assertKeyMatchesCertificate,
  caLifetimeMs,
  generateKeyPair,
  generateSelfSignedCA,
  parseCertificatePem,
  parsePrivateKeyPem,
  privateKeyToPem,
} from "../../pki/index.js";
import { generateToken, randomBase64Secret, randomClusterId } from "./tokens.js";

/** A certificate and its private key, both PEM text. */
export interface PemPair {
  crt: string;
  key: string;
}

export interface SecretsBundle {
  cluster: { id: string; secret: string };
  secrets: { bootstrapToken: string; secretboxEncryptionSecret: string; aescbcEncryptionSecret?: string };
  /** `token` is `machine.token`, what trustd checks. */
  trustdInfo: { token: string };
  certs: {
    /** etcd CA (ECDSA P-256, O=etcd). */
    etcd: PemPair;
    /** Kubernetes CA (ECDSA P-256, O=kubernetes). */
    k8s: PemPair;
    /** Front-proxy CA (ECDSA P-256, CN=front-proxy). */
    k8sAggregator: PemPair;
    /** Service-account signing key (RSA 4096 for v1.7 bundles; older bundles carry ECDSA). */
    k8sServiceAccount: { key: string };
    /** OS (node API) CA (Ed25519, O=talos). */
    os: PemPair;
  };
}

/** Creates every CA, key and token of a new cluster; NotBefore of the CAs is `now`. */
export async function generateSecretsBundle(now: Date = new Date()): Promise<SecretsBundle> {
  const lifetimeMs = caLifetimeMs;
  const [os, k8s, k8sAggregator, etcd, serviceAccount] = await Promise.all([
    generateSelfSignedCA({ algorithm: "ed25519", organizations: ["talos"], lifetimeMs, now }),
    generateSelfSignedCA({ algorithm: "ecdsa-p256", organizations: ["kubernetes"], lifetimeMs, now }),
    generateSelfSignedCA({ algorithm: "ecdsa-p256", commonName: "front-proxy", lifetimeMs, now }),
    generateSelfSignedCA({ algorithm: "ecdsa-p256", organizations: ["etcd"], lifetimeMs, now }),
    generateKeyPair("rsa"),
  ]);
  const pair = (c: { certPem: string; keyPem: string }): PemPair => ({ crt: c.certPem, key: c.keyPem });
  return {
    cluster: { id: randomClusterId(), secret: randomBase64Secret() },
    secrets: { bootstrapToken: generateToken(), secretboxEncryptionSecret: randomBase64Secret() },
    trustdInfo: { token: generateToken() },
    certs: {
      etcd: pair(etcd),
      k8s: pair(k8s),
      k8sAggregator: pair(k8sAggregator),
      k8sServiceAccount: { key: privateKeyToPem(serviceAccount) },
      os: pair(os),
    },
  };
}

const b64 = (pem: string): string => Buffer.from(pem, "utf8").toString("base64");

/** YAML text in the shape of `talosctl gen secrets` output. */
export function secretsBundleToYaml(bundle: SecretsBundle): string {
  const pair = (p: PemPair) => ({ crt: b64(p.crt), key: b64(p.key) });
  const secrets: Record<string, string> = {
    bootstraptoken: bundle.secrets.bootstrapToken,
    secretboxencryptionsecret: bundle.secrets.secretboxEncryptionSecret,
  };
  if (bundle.secrets.aescbcEncryptionSecret) secrets.aescbcencryptionsecret = bundle.secrets.aescbcEncryptionSecret;
  const value = {
    cluster: { id: bundle.cluster.id, secret: bundle.cluster.secret },
    secrets,
    trustdinfo: { token: bundle.trustdInfo.token },
    certs: {
      etcd: pair(bundle.certs.etcd),
      k8s: pair(bundle.certs.k8s),
      k8saggregator: pair(bundle.certs.k8sAggregator),
      k8sserviceaccount: { key: b64(bundle.certs.k8sServiceAccount.key) },
      os: pair(bundle.certs.os),
    },
  };
  return stringify(value, { indent: 4, lineWidth: 0 });
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads string fields by path, collecting a problem per missing one. */
class FieldReader {
  readonly problems: string[] = [];
  constructor(private readonly root: Obj) {}

  string(path: string, optional = false): string {
    let cur: unknown = this.root;
    for (const key of path.split(".")) cur = isObj(cur) ? cur[key] : undefined;
    if (typeof cur === "string" && cur !== "") return cur;
    if (!(optional && (cur === undefined || cur === null || cur === ""))) this.problems.push(`${path}: missing or not a string`);
    return "";
  }

  /** A base64-encoded PEM value. */
  pem(path: string): string {
    const raw = this.string(path);
    if (raw === "") return "";
    const text = Buffer.from(raw, "base64").toString("utf8");
    if (!text.includes("-----BEGIN ")) this.problems.push(`${path}: not base64 of a PEM block`);
    return text;
  }
}

function checkPair(problems: string[], path: string, pair: PemPair): void {
  if (pair.crt === "" || pair.key === "") return;
  try {
    assertKeyMatchesCertificate(parseCertificatePem(pair.crt), parsePrivateKeyPem(pair.key));
  } catch (err) {
    problems.push(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function checkKey(problems: string[], path: string, pem: string): void {
  if (pem === "") return;
  try {
    parsePrivateKeyPem(pem);
  } catch (err) {
    problems.push(`${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function parseSingleYaml(text: string, what: string): Obj {
  const docs = parseAllDocuments(text);
  const doc = Array.isArray(docs) ? docs[0] : undefined;
  if (!doc) throw new InvalidInputError(`${what}: empty document`);
  if (doc.errors.length > 0) throw new InvalidInputError(`${what}: ${doc.errors[0]!.message}`);
  const value: unknown = doc.toJS();
  if (!isObj(value)) throw new InvalidInputError(`${what}: expected a mapping`);
  return value;
}

function invalid(what: string, problems: string[]): InvalidInputError {
  return new InvalidInputError(`${what}:\n${problems.map((p) => `\t* ${p}`).join("\n")}`, { problems });
}

/** Parses a `gen secrets` YAML file; every missing or unusable field is reported at once. */
export function loadSecretsBundle(text: string | Buffer): SecretsBundle {
  const what = "invalid secrets bundle";
  const r = new FieldReader(parseSingleYaml(typeof text === "string" ? text : text.toString("utf8"), what));
  const pair = (path: string): PemPair => ({ crt: r.pem(`${path}.crt`), key: r.pem(`${path}.key`) });
  const aescbc = r.string("secrets.aescbcencryptionsecret", true);
  const bundle: SecretsBundle = {
    cluster: { id: r.string("cluster.id"), secret: r.string("cluster.secret") },
    secrets: {
      bootstrapToken: r.string("secrets.bootstraptoken"),
      secretboxEncryptionSecret: r.string("secrets.secretboxencryptionsecret"),
      ...(aescbc ? { aescbcEncryptionSecret: aescbc } : {}),
    },
    trustdInfo: { token: r.string("trustdinfo.token") },
    certs: {
      etcd: pair("certs.etcd"),
      k8s: pair("certs.k8s"),
      k8sAggregator: pair("certs.k8saggregator"),
      k8sServiceAccount: { key: r.pem("certs.k8sserviceaccount.key") },
      os: pair("certs.os"),
    },
  };
  const problems = r.problems;
  checkPair(problems, "certs.etcd", bundle.certs.etcd);
  checkPair(problems, "certs.k8s", bundle.certs.k8s);
  checkPair(problems, "certs.k8saggregator", bundle.certs.k8sAggregator);
  checkPair(problems, "certs.os", bundle.certs.os);
  checkKey(problems, "certs.k8sserviceaccount.key", bundle.certs.k8sServiceAccount.key);
  if (problems.length > 0) throw invalid(what, problems);
  return bundle;
}

/**
 * The secrets a control-plane config carries, as a bundle (what GenerateConfiguration
 * on a configured node reuses). Accepts the config text (multi-document; the v1alpha1
 * document is used) or the parsed v1alpha1 document.
 */
export function secretsBundleFromConfig(config: string | Buffer | Obj): SecretsBundle {
  const what = "cannot extract secrets from the machine configuration";
  let doc: Obj | undefined;
  if (isObj(config) && !Buffer.isBuffer(config)) {
    doc = config;
  } else {
    const text = typeof config === "string" ? config : config.toString("utf8");
    for (const d of parseAllDocuments(text)) {
      const v: unknown = d.toJS();
      if (isObj(v) && (v.machine !== undefined || v.cluster !== undefined)) doc = v;
    }
  }
  if (!doc) throw new InvalidInputError(`${what}: no v1alpha1 document`);
  const r = new FieldReader(doc);
  const pair = (path: string): PemPair => ({ crt: r.pem(`${path}.crt`), key: r.pem(`${path}.key`) });
  const aescbc = r.string("cluster.aescbcEncryptionSecret", true);
  const bundle: SecretsBundle = {
    cluster: { id: r.string("cluster.id"), secret: r.string("cluster.secret") },
    secrets: {
      bootstrapToken: r.string("cluster.token"),
      secretboxEncryptionSecret: r.string("cluster.secretboxEncryptionSecret", aescbc !== ""),
      ...(aescbc ? { aescbcEncryptionSecret: aescbc } : {}),
    },
    trustdInfo: { token: r.string("machine.token") },
    certs: {
      etcd: pair("cluster.etcd.ca"),
      k8s: pair("cluster.ca"),
      k8sAggregator: pair("cluster.aggregatorCA"),
      k8sServiceAccount: { key: r.pem("cluster.serviceAccount.key") },
      os: pair("machine.ca"),
    },
  };
  const problems = r.problems;
  checkPair(problems, "machine.ca", bundle.certs.os);
  checkPair(problems, "cluster.ca", bundle.certs.k8s);
  if (problems.length > 0) throw invalid(what, problems);
  return bundle;
}
