// The kube-apiserver command Basalt renders, run for real: the real kube-apiserver
// v1.30.3 started with exactly the rendered flags against a real etcd over mutual TLS
// on loopback, until it answers /readyz. Only what the kubelet and the node provide
// is substituted: $(POD_IP), the host paths the pod mounts (a temporary directory
// here), and free loopback ports in place of 2379 and the API server port.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createPublicKey, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { apiServerConfig, type ControlPlaneConfig } from "../../agent/src/controllers/k8s/control-plane-config.js";
import { apiServerPod, paths } from "../../agent/src/controllers/k8s/control-plane-pods.js";
import { loadConfig } from "../../agent/src/config/load.js";
import { generateSelfSignedCA, issueCertificate, type CertificateAndKey } from "../../agent/src/pki/certificates.js";
import { freePort, stopProcess } from "./helpers/sandbox.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const fixtures = path.join(repoRoot, "test/fixtures/k8s/static-pods");
// The Kubernetes binaries are built by the images work, the etcd binary by scripts/go-component.sh.
const k8sBin = process.env.BASALT_K8S_BIN ?? path.resolve(repoRoot, "../images/_out/k8s/amd64");
const apiserverBinary = path.join(k8sBin, "kube-apiserver");
const etcdBinary = process.env.BASALT_ETCD ?? path.resolve(repoRoot, "_out/k8s/amd64/etcd");
const missing = [apiserverBinary, etcdBinary].filter((f) => !existsSync(f));
const skip = missing.length > 0 ? `not built: ${missing.join(", ")}` : false;

const HOUR = 3_600_000;
const ec = "ecdsa-p256" as const;

interface Pki {
  ca: CertificateAndKey;
  etcdCA: CertificateAndKey;
  etcdServer: CertificateAndKey;
  admin: CertificateAndKey;
}

/** Everything kube-apiserver's pod mounts, written as the node's secrets and config controllers would. */
async function writeHostPaths(dir: string, admissionControl: unknown): Promise<Pki> {
  const secrets = path.join(dir, "secrets");
  const config = path.join(dir, "config");
  for (const d of [secrets, config, path.join(dir, "audit")]) mkdirSync(d, { recursive: true });
  const ca = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: ec });
  const aggregatorCA = await generateSelfSignedCA({ algorithm: ec });
  const etcdCA = await generateSelfSignedCA({ organizations: ["etcd"], algorithm: ec });
  const issue = (issuer: CertificateAndKey, commonName: string, usage: "serverAuth" | "clientAuth", organizations: string[] = []) =>
    issueCertificate(issuer, {
      commonName,
      organizations,
      ...(usage === "serverAuth" ? { dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] } : {}),
      extKeyUsage: [usage],
      lifetimeMs: HOUR,
      algorithm: ec,
    });
  const apiserver = await issue(ca, "kube-apiserver", "serverAuth");
  const kubeletClient = await issue(ca, "apiserver-kubelet-client", "clientAuth", ["system:masters"]);
  const frontProxy = await issue(aggregatorCA, "front-proxy-client", "clientAuth");
  const etcdServer = await issue(etcdCA, "etcd", "serverAuth");
  const etcdClient = await issue(etcdCA, "kube-apiserver", "clientAuth");
  const serviceAccount = await issue(ca, "service-account", "clientAuth");
  const files: Record<string, string> = {
    "ca.crt": ca.certPem,
    "aggregator-ca.crt": aggregatorCA.certPem,
    "apiserver.crt": apiserver.certPem,
    "apiserver.key": apiserver.keyPem,
    "apiserver-kubelet-client.crt": kubeletClient.certPem,
    "apiserver-kubelet-client.key": kubeletClient.keyPem,
    "front-proxy-client.crt": frontProxy.certPem,
    "front-proxy-client.key": frontProxy.keyPem,
    "etcd-client-ca.crt": etcdCA.certPem,
    "etcd-client.crt": etcdClient.certPem,
    "etcd-client.key": etcdClient.keyPem,
    "service-account.key": serviceAccount.keyPem,
    "service-account.pub": createPublicKey(serviceAccount.keyPem).export({ type: "spki", format: "pem" }).toString(),
    "encryptionconfig.yaml": [
      "apiVersion: apiserver.config.k8s.io/v1",
      "kind: EncryptionConfiguration",
      "resources:",
      "  - resources: [secrets]",
      "    providers:",
      `      - aescbc: {keys: [{name: key1, secret: ${randomBytes(32).toString("base64")}}]}`,
      "      - identity: {}",
      "",
    ].join("\n"),
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(secrets, name), text);
  writeFileSync(
    path.join(config, "admission-control-config.yaml"),
    JSON.stringify({ apiVersion: "apiserver.config.k8s.io/v1", kind: "AdmissionConfiguration", plugins: admissionControl }),
  );
  writeFileSync(path.join(config, "auditpolicy.yaml"), JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }));
  const admin = await issue(ca, "admin", "clientAuth", ["system:masters"]);
  return { ca, etcdCA, etcdServer, admin };
}

function run(t: TestContext, binary: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  t.after(() => stopProcess(child));
  return { child, output: () => out };
}

/** GET `url` with a client certificate; resolves with status and body. */
function get(url: string, ca: string, client: CertificateAndKey): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, cert: client.certPem, key: client.keyPem, timeout: 5_000 }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on("error", reject)
      .on("timeout", function (this: { destroy(e: Error): void }) {
        this.destroy(new Error("timeout"));
      });
  });
}

/** Polls until kube-apiserver answers /readyz with 200 or exits; its last answer or its exit. */
async function readyOrExit(url: string, pki: Pki, apiserver: { child: ChildProcess; output: () => string }): Promise<string> {
  const deadline = Date.now() + 240_000;
  let last = "";
  while (Date.now() < deadline) {
    if (apiserver.child.exitCode !== null) return `exited ${apiserver.child.exitCode}`;
    try {
      const res = await get(url, pki.ca.certPem, pki.admin);
      if (res.status === 200) return res.body;
      last = `${res.status}: ${res.body}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return `not ready: ${last}`;
}

for (const configName of ["controlplane.yaml", "controlplane-custom.yaml"]) {
  test(`kube-apiserver v1.30.3 starts with the flags rendered for ${configName}`, { skip, timeout: 300_000 }, async (t) => {
    const doc = loadConfig(readFileSync(path.join(fixtures, configName))).v1alpha1()!;
    const cfg: ControlPlaneConfig = { machine: doc.machine!, cluster: doc.cluster! };
    const pod = apiServerPod(apiServerConfig(cfg), { secrets: "1", configFiles: "1", config: "1" }) as {
      spec: { containers: { command: string[] }[] };
    };
    const [binary, ...flags] = pod.spec.containers[0].command;
    assert.equal(binary, "/usr/local/bin/kube-apiserver");

    const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-apiserver-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const admission = (cfg.cluster.apiServer?.admissionControl ?? []).map((p) => ({ name: p.name, configuration: p.configuration }));
    const pki = await writeHostPaths(dir, admission);

    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdFile = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const etcd = run(t, etcdBinary, [
      "--name=etcd",
      `--data-dir=${path.join(dir, "etcd")}`,
      `--listen-client-urls=https://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=https://localhost:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=etcd=http://127.0.0.1:${peerPort}`,
      `--cert-file=${etcdFile("etcd.crt", pki.etcdServer.certPem)}`,
      `--key-file=${etcdFile("etcd.key", pki.etcdServer.keyPem)}`,
      `--trusted-ca-file=${etcdFile("etcd-ca.crt", pki.etcdCA.certPem)}`,
      "--client-cert-auth",
    ]);

    const substituted = flags.map((f) =>
      f
        .replaceAll(paths.apiServerSecrets, path.join(dir, "secrets"))
        .replaceAll(paths.apiServerConfig, path.join(dir, "config"))
        .replaceAll(paths.auditLog, path.join(dir, "audit"))
        .replace("$(POD_IP)", "127.0.0.1")
        .replace(/^--etcd-servers=https:\/\/localhost:2379$/, `--etcd-servers=https://localhost:${etcdPort}`)
        .replace(/^--secure-port=\d+$/, `--secure-port=${apiPort}`)
        .replace(/^--bind-address=0\.0\.0\.0$/, "--bind-address=127.0.0.1"),
    );
    assert.equal(substituted.filter((f) => f.includes("/system/") || f.includes("/var/log/")).length, 0, "every host path is substituted");
    const apiserver = run(t, apiserverBinary, substituted);
    const answer = await readyOrExit(`https://127.0.0.1:${apiPort}/readyz`, pki, apiserver);
    assert.equal(answer, "ok", `kube-apiserver: ${answer}\n--- kube-apiserver output (tail) ---\n${apiserver.output().slice(-4000)}\n--- etcd (tail) ---\n${etcd.output().slice(-1500)}`);
    t.diagnostic(`kube-apiserver ready with the ${flags.length} rendered flags`);
  });
}
