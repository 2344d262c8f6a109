// A real kube-apiserver (v1.30.3) backed by a real etcd, both on loopback, with a
// generated cluster CA and an admin (system:masters) client certificate. The binaries
// are those scripts/go-component.sh builds; one already built in _out is used as is.

import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { KubeClient } from "../../../agent/src/controllers/k8s/kube-client.js";
import { generateSelfSignedCA, issueCertificate } from "../../../agent/src/pki/index.js";
import { goProgram } from "./go-programs.js";
import { freePort } from "./sandbox.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

type CA = Awaited<ReturnType<typeof generateSelfSignedCA>>;
type KeyPair = Awaited<ReturnType<typeof issueCertificate>>;

export interface ApiServer {
  /** https://127.0.0.1:<port> */
  server: string;
  dir: string;
  ca: CA;
  admin: KeyPair;
  /** A client with the admin certificate. */
  client: KubeClient;
  /** A client certificate of the cluster CA, e.g. a kubelet's (CN system:node:NAME, O system:nodes). */
  issueClient(commonName: string, organizations: string[]): Promise<KeyPair>;
  stop(): void;
}

/** The program already built under _out, else built now. */
function program(name: string): string {
  const built = path.join(repo, "_out/k8s/amd64", name);
  return existsSync(built) ? built : goProgram(name);
}

/** Resolves once GET /readyz answers 200; fails when a process exits or the deadline passes. */
async function untilReady(client: KubeClient, procs: ChildProcess[], deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      await client.request("GET", "/readyz");
      return;
    } catch (err) {
      if (Date.now() > end || procs.some((p) => p.exitCode !== null)) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function startApiServer(prefix: string): Promise<ApiServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const procs: ChildProcess[] = [];
  const out: string[] = [];
  const start = (bin: string, args: string[]) => {
    const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    p.stdout!.on("data", (d: Buffer) => out.push(d.toString()));
    p.stderr!.on("data", (d: Buffer) => out.push(d.toString()));
    procs.push(p);
  };
  const file = (name: string, text: string): string => (
    writeFileSync(path.join(dir, name), text), path.join(dir, name)
  );
  const ca = await generateSelfSignedCA({ commonName: "kubernetes", algorithm: "ecdsa-p256" });
  const issueClient = (commonName: string, organizations: string[]) =>
    issueCertificate(ca, {
      commonName,
      organizations,
      extKeyUsage: ["clientAuth"],
      lifetimeMs: 3_600_000,
      algorithm: "ecdsa-p256",
    });
  const serving = await issueCertificate(ca, {
    commonName: "kube-apiserver",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3_600_000,
    algorithm: "ecdsa-p256",
  });
  const admin = await issueClient("admin", ["system:masters"]);
  const sa = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  start(program("etcd"), [
    ...["--data-dir", path.join(dir, "etcd"), "--listen-client-urls", etcdUrl, "--advertise-client-urls", etcdUrl],
    ...["--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl],
    ...["--initial-cluster", `default=${peerUrl}`],
  ]);
  start(program("kube-apiserver"), [
    `--etcd-servers=${etcdUrl}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    `--tls-cert-file=${file("apiserver.crt", serving.certPem)}`,
    `--tls-private-key-file=${file("apiserver.key", serving.keyPem)}`,
    `--client-ca-file=${file("ca.crt", ca.certPem)}`,
    "--service-account-issuer=https://kubernetes.default.svc",
    `--service-account-key-file=${file("sa.pub", sa.publicKey.export({ type: "spki", format: "pem" }).toString())}`,
    `--service-account-signing-key-file=${file("sa.key", sa.privateKey.export({ type: "pkcs8", format: "pem" }).toString())}`,
    "--service-cluster-ip-range=10.96.0.0/12",
    "--authorization-mode=Node,RBAC",
    // As on a node: the bootstrap manifests hold privileged pods (flannel, kube-proxy).
    "--allow-privileged=true",
    // As on a node: a kubelet may change only its own Node, and neither its taints nor restricted labels.
    "--enable-admission-plugins=NodeRestriction",
  ]);
  const server = `https://127.0.0.1:${apiPort}`;
  const client = new KubeClient({ server, ca: ca.certPem, cert: admin.certPem, key: admin.keyPem });
  const stop = () => {
    client.close();
    for (const p of procs) p.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await untilReady(client, procs, 180_000);
  } catch (err) {
    stop();
    throw new Error(`API server not ready: ${String(err)}\n${out.join("").slice(-3000)}`);
  }
  return { server, dir, ca, admin, client, issueClient, stop };
}
