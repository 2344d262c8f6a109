// The control plane commands Basalt renders, run for real: kube-apiserver,
// kube-controller-manager and kube-scheduler v1.30.3 started with exactly the rendered
// flags against a real etcd over mutual TLS on loopback, until each answers its health
// endpoint. Only what the kubelet and the node provide is substituted: $(POD_IP), the
// host paths the pods mount (a temporary directory here), free loopback ports in place
// of 2379 and the API server port, and a free --secure-port for the two components
// whose default ports (10257, 10259) other work on this host may hold.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createPublicKey, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import {
  apiServerConfig,
  controllerManagerConfig,
  schedulerConfig,
  type ControlPlaneConfig,
} from "../../agent/src/controllers/k8s/control-plane-config.js";
import {
  apiServerPod,
  controllerManagerPod,
  paths,
  schedulerPod,
} from "../../agent/src/controllers/k8s/control-plane-pods.js";
import {
  schedulerConfigYaml,
  schedulerKubeconfigPath,
} from "../../agent/src/controllers/secrets/kubernetes-config-files.js";
import { loadConfig } from "../../agent/src/config/load.js";
import { generateSelfSignedCA, issueCertificate, type CertificateAndKey } from "../../agent/src/pki/certificates.js";
import type { Unstructured } from "../../agent/src/resources/unstructured.js";
import { goProgram } from "./helpers/go-programs.js";
import { freePort, stopProcess } from "./helpers/sandbox.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const fixtures = path.join(repoRoot, "test/fixtures/k8s/static-pods");
const binaries = {
  apiserver: "kube-apiserver",
  controllerManager: "kube-controller-manager",
  scheduler: "kube-scheduler",
};

const HOUR = 3_600_000;

interface Pki {
  ca: CertificateAndKey;
  etcdCA: CertificateAndKey;
  etcdServer: CertificateAndKey;
  admin: CertificateAndKey;
}

type Issue = (
  issuer: CertificateAndKey,
  commonName: string,
  usage: "serverAuth" | "clientAuth",
  organizations?: string[],
) => Promise<CertificateAndKey>;
const issue: Issue = (issuer, commonName, usage, organizations = []) =>
  issueCertificate(issuer, {
    commonName,
    organizations,
    ...(usage === "serverAuth" ? { dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] } : {}),
    extKeyUsage: [usage],
    lifetimeMs: HOUR,
    algorithm: "ecdsa-p256",
  });

function kubeconfig(server: string, ca: CertificateAndKey, client: CertificateAndKey): string {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "local", cluster: { server, "certificate-authority-data": b64(ca.certPem) } }],
    users: [
      { name: "user", user: { "client-certificate-data": b64(client.certPem), "client-key-data": b64(client.keyPem) } },
    ],
    contexts: [{ name: "local", context: { cluster: "local", user: "user" } }],
    "current-context": "local",
  });
}

/** Where this test keeps what the node keeps under each path the pods mount. */
const hostDirs = (dir: string): [string, string][] => [
  [paths.apiServerSecrets, path.join(dir, "apiserver-secrets")],
  [paths.apiServerConfig, path.join(dir, "apiserver-config")],
  [paths.auditLog, path.join(dir, "audit")],
  [paths.controllerManagerSecrets, path.join(dir, "cm-secrets")],
  [paths.schedulerSecrets, path.join(dir, "scheduler-secrets")],
  [paths.schedulerConfig, path.join(dir, "scheduler-config")],
];

function writeFiles(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
}

/** Everything the three pods mount, written as the node's secrets and config controllers would. */
async function writeHostPaths(dir: string, cfg: ControlPlaneConfig, apiServerURL: string): Promise<Pki> {
  const at = Object.fromEntries(hostDirs(dir));
  const ca = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  const aggregatorCA = await generateSelfSignedCA({ algorithm: "ecdsa-p256" });
  const etcdCA = await generateSelfSignedCA({ organizations: ["etcd"], algorithm: "ecdsa-p256" });
  const apiserver = await issue(ca, "kube-apiserver", "serverAuth");
  const kubeletClient = await issue(ca, "apiserver-kubelet-client", "clientAuth", ["system:masters"]);
  const frontProxy = await issue(aggregatorCA, "front-proxy-client", "clientAuth");
  const etcdClient = await issue(etcdCA, "kube-apiserver", "clientAuth");
  const serviceAccount = await issue(ca, "service-account", "clientAuth");
  writeFiles(at[paths.apiServerSecrets]!, {
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
    "encryptionconfig.yaml": JSON.stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "EncryptionConfiguration",
      resources: [
        {
          resources: ["secrets"],
          providers: [
            { aescbc: { keys: [{ name: "key1", secret: randomBytes(32).toString("base64") }] } },
            { identity: {} },
          ],
        },
      ],
    }),
  });
  const admission = (cfg.cluster.apiServer?.admissionControl ?? []).map((p) => ({
    name: p.name,
    configuration: p.configuration,
  }));
  writeFiles(at[paths.apiServerConfig]!, {
    "admission-control-config.yaml": JSON.stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AdmissionConfiguration",
      plugins: admission,
    }),
    "auditpolicy.yaml": JSON.stringify({
      apiVersion: "audit.k8s.io/v1",
      kind: "Policy",
      rules: [{ level: "Metadata" }],
    }),
  });
  mkdirSync(at[paths.auditLog]!, { recursive: true });
  writeFiles(at[paths.controllerManagerSecrets]!, {
    "ca.crt": ca.certPem,
    "ca.key": ca.keyPem,
    "service-account.key": serviceAccount.keyPem,
    kubeconfig: kubeconfig(apiServerURL, ca, await issue(ca, "system:kube-controller-manager", "clientAuth")),
  });
  writeFiles(at[paths.schedulerSecrets]!, {
    kubeconfig: kubeconfig(apiServerURL, ca, await issue(ca, "system:kube-scheduler", "clientAuth")),
  });
  const schedulerYaml = schedulerConfigYaml({ config: cfg.cluster.scheduler?.config ?? null });
  writeFiles(at[paths.schedulerConfig]!, {
    "scheduler-config.yaml": schedulerYaml.replace(
      schedulerKubeconfigPath,
      path.join(at[paths.schedulerSecrets]!, "kubeconfig"),
    ),
  });
  return {
    ca,
    etcdCA,
    etcdServer: await issue(etcdCA, "etcd", "serverAuth"),
    admin: await issue(ca, "admin", "clientAuth", ["system:masters"]),
  };
}

interface Proc {
  child: ChildProcess;
  output: () => string;
}

function run(t: TestContext, binary: string, args: string[]): Proc {
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  t.after(() => stopProcess(child));
  return { child, output: () => out };
}

/** GET `url` (with a client certificate, or trusting any server when `tls` is absent): status and body. */
function get(url: string, tls?: { ca: string; client: CertificateAndKey }): Promise<{ status: number; body: string }> {
  const options = tls
    ? { ca: tls.ca, cert: tls.client.certPem, key: tls.client.keyPem }
    : { rejectUnauthorized: false };
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...options, timeout: 5_000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
  });
}

/** Polls `url` until it answers 200 or the process exits: the body, or why not. */
async function healthy(url: string, proc: Proc, tls?: { ca: string; client: CertificateAndKey }): Promise<string> {
  const deadline = Date.now() + 240_000;
  let last = "";
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null) return `exited ${proc.child.exitCode}`;
    try {
      const res = await get(url, tls);
      if (res.status === 200) return res.body;
      last = `${res.status}: ${res.body}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return `not healthy: ${last}`;
}

const commandOf = (pod: Unstructured) =>
  (pod as { spec: { containers: { command: string[] }[] } }).spec.containers[0]!.command;

for (const configName of ["controlplane.yaml", "controlplane-custom.yaml"]) {
  test(`kube-apiserver, kube-controller-manager and kube-scheduler v1.30.3 run with the flags rendered for ${configName}`, {
    timeout: 1_800_000,
  }, async (t) => {
    const doc = loadConfig(readFileSync(path.join(fixtures, configName))).v1alpha1()!;
    const cfg: ControlPlaneConfig = { machine: doc.machine!, cluster: doc.cluster! };
    const versions = { secrets: "1", configFiles: "1", config: "1" };
    const commands = {
      apiserver: commandOf(apiServerPod(apiServerConfig(cfg), versions)),
      controllerManager: commandOf(controllerManagerPod(controllerManagerConfig(cfg), versions)),
      scheduler: commandOf(schedulerPod(schedulerConfig(cfg), versions)),
    };
    for (const [name, binary] of Object.entries(binaries))
      assert.equal(commands[name as keyof typeof binaries][0], `/usr/local/bin/${binary}`);

    const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-controlplane-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const [etcdPort, peerPort, apiPort, cmPort, schedulerPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const pki = await writeHostPaths(dir, cfg, `https://127.0.0.1:${apiPort}`);
    writeFiles(dir, {
      "etcd.crt": pki.etcdServer.certPem,
      "etcd.key": pki.etcdServer.keyPem,
      "etcd-ca.crt": pki.etcdCA.certPem,
    });
    const etcd = run(t, goProgram("etcd"), [
      "--name=etcd",
      `--data-dir=${path.join(dir, "etcd")}`,
      `--listen-client-urls=https://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=https://localhost:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=etcd=http://127.0.0.1:${peerPort}`,
      `--cert-file=${path.join(dir, "etcd.crt")}`,
      `--key-file=${path.join(dir, "etcd.key")}`,
      `--trusted-ca-file=${path.join(dir, "etcd-ca.crt")}`,
      "--client-cert-auth",
    ]);

    const substitute = (flags: string[]) =>
      flags.map((f) => {
        let out = f;
        for (const [node, here] of hostDirs(dir)) out = out.replaceAll(node, here);
        return out
          .replace("$(POD_IP)", "127.0.0.1")
          .replace(/^--etcd-servers=https:\/\/localhost:2379$/, `--etcd-servers=https://localhost:${etcdPort}`)
          .replace(/^--secure-port=\d+$/, `--secure-port=${apiPort}`)
          .replace(/^--bind-address=0\.0\.0\.0$/, "--bind-address=127.0.0.1");
      });
    const apiserverFlags = substitute(commands.apiserver.slice(1));
    const cmFlags = [...substitute(commands.controllerManager.slice(1)), `--secure-port=${cmPort}`];
    const schedulerFlags = [...substitute(commands.scheduler.slice(1)), `--secure-port=${schedulerPort}`];
    for (const flags of [apiserverFlags, cmFlags, schedulerFlags]) {
      assert.deepEqual(
        flags.filter((f) => f.includes("/system/") || f.includes("/var/log/")),
        [],
        "every host path is substituted",
      );
    }

    const apiserver = run(t, goProgram(binaries.apiserver), apiserverFlags);
    const tail = (p: Proc) => p.output().slice(-3000);
    const apiAnswer = await healthy(`https://127.0.0.1:${apiPort}/readyz`, apiserver, {
      ca: pki.ca.certPem,
      client: pki.admin,
    });
    assert.equal(apiAnswer, "ok", `kube-apiserver: ${apiAnswer}\n${tail(apiserver)}\n--- etcd ---\n${tail(etcd)}`);

    const cm = run(t, goProgram(binaries.controllerManager), cmFlags);
    const scheduler = run(t, goProgram(binaries.scheduler), schedulerFlags);
    // The probes Talos gives both pods: GET /healthz over HTTPS on the component's secure port.
    const [cmAnswer, schedulerAnswer] = await Promise.all([
      healthy(`https://localhost:${cmPort}/healthz`, cm),
      healthy(`https://localhost:${schedulerPort}/healthz`, scheduler),
    ]);
    assert.equal(cmAnswer, "ok", `kube-controller-manager: ${cmAnswer}\n${tail(cm)}`);
    assert.equal(schedulerAnswer, "ok", `kube-scheduler: ${schedulerAnswer}\n${tail(scheduler)}`);
    t.diagnostic(
      `healthy with ${apiserverFlags.length}, ${cmFlags.length - 1} and ${schedulerFlags.length - 1} rendered flags`,
    );
  });
}
