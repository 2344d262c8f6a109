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
  pemFromBase64,
  pemToBase64,
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

/** YAML text in the shape of `talosctl gen secrets` output. */
export function secretsBundleToYaml(bundle: SecretsBundle): string {
  const pair = (p: PemPair) => ({ crt: pemToBase64(p.crt), key: pemToBase64(p.key) });
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
      k8sserviceaccount: { key: pemToBase64(bundle.certs.k8sServiceAccount.key) },
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
    if (!(optional && (cur === undefined || cur === null || cur === "")))
      this.problems.push(`${path}: missing or not a string`);
    return "";
  }

  /** A base64-encoded PEM value. */
  pem(path: string): string {
    const raw = this.string(path);
    if (raw === "") return "";
    const text = pemFromBase64(raw);
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

/** Where each bundle field sits in a document (a `gen secrets` file or a v1alpha1 config). */
interface BundleLayout {
  clusterId: string;
  clusterSecret: string;
  bootstrapToken: string;
  secretboxEncryptionSecret: string;
  aescbcEncryptionSecret: string;
  trustdToken: string;
  /** Cert/key pairs: `<path>.crt` and `<path>.key`. */
  etcd: string;
  k8s: string;
  k8sAggregator: string;
  os: string;
  serviceAccountKey: string;
}

/**
 * Reads a bundle laid out as `layout` says, collecting a problem per missing field.
 * The secretbox secret may be absent when an aescbc one is there (older configs).
 */
function readBundle(
  r: FieldReader,
  layout: BundleLayout,
  secretboxOptional: (aescbc: string) => boolean,
): SecretsBundle {
  const pair = (path: string): PemPair => ({ crt: r.pem(`${path}.crt`), key: r.pem(`${path}.key`) });
  const aescbc = r.string(layout.aescbcEncryptionSecret, true);
  return {
    cluster: { id: r.string(layout.clusterId), secret: r.string(layout.clusterSecret) },
    secrets: {
      bootstrapToken: r.string(layout.bootstrapToken),
      secretboxEncryptionSecret: r.string(layout.secretboxEncryptionSecret, secretboxOptional(aescbc)),
      ...(aescbc ? { aescbcEncryptionSecret: aescbc } : {}),
    },
    trustdInfo: { token: r.string(layout.trustdToken) },
    certs: {
      etcd: pair(layout.etcd),
      k8s: pair(layout.k8s),
      k8sAggregator: pair(layout.k8sAggregator),
      k8sServiceAccount: { key: r.pem(layout.serviceAccountKey) },
      os: pair(layout.os),
    },
  };
}

const secretsFileLayout: BundleLayout = {
  clusterId: "cluster.id",
  clusterSecret: "cluster.secret",
  bootstrapToken: "secrets.bootstraptoken",
  secretboxEncryptionSecret: "secrets.secretboxencryptionsecret",
  aescbcEncryptionSecret: "secrets.aescbcencryptionsecret",
  trustdToken: "trustdinfo.token",
  etcd: "certs.etcd",
  k8s: "certs.k8s",
  k8sAggregator: "certs.k8saggregator",
  os: "certs.os",
  serviceAccountKey: "certs.k8sserviceaccount.key",
};

const machineConfigLayout: BundleLayout = {
  clusterId: "cluster.id",
  clusterSecret: "cluster.secret",
  bootstrapToken: "cluster.token",
  secretboxEncryptionSecret: "cluster.secretboxEncryptionSecret",
  aescbcEncryptionSecret: "cluster.aescbcEncryptionSecret",
  trustdToken: "machine.token",
  etcd: "cluster.etcd.ca",
  k8s: "cluster.ca",
  k8sAggregator: "cluster.aggregatorCA",
  os: "machine.ca",
  serviceAccountKey: "cluster.serviceAccount.key",
};

/** Parses a `gen secrets` YAML file; every missing or unusable field is reported at once. */
export function loadSecretsBundle(text: string | Buffer): SecretsBundle {
  const what = "invalid secrets bundle";
  const r = new FieldReader(parseSingleYaml(typeof text === "string" ? text : text.toString("utf8"), what));
  const l = secretsFileLayout;
  const bundle = readBundle(r, l, () => false);
  const problems = r.problems;
  checkPair(problems, l.etcd, bundle.certs.etcd);
  checkPair(problems, l.k8s, bundle.certs.k8s);
  checkPair(problems, l.k8sAggregator, bundle.certs.k8sAggregator);
  checkPair(problems, l.os, bundle.certs.os);
  checkKey(problems, l.serviceAccountKey, bundle.certs.k8sServiceAccount.key);
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
  const l = machineConfigLayout;
  const bundle = readBundle(r, l, (aescbc) => aescbc !== "");
  const problems = r.problems;
  checkPair(problems, l.os, bundle.certs.os);
  checkPair(problems, l.k8s, bundle.certs.k8s);
  if (problems.length > 0) throw invalid(what, problems);
  return bundle;
}
