// The bootstrap manifests applied to a real kube-apiserver (v1.30.3) backed by a real
// etcd on loopback: every object created, a second apply updates nothing, a bad object
// is reported while the others apply. Skipped when the kube-apiserver binary is absent.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { applyObjects, ManifestApplyError } from "../../agent/src/controllers/k8s/manifest-apply.js";
import { bootstrapManifestsInput } from "../../agent/src/controllers/k8s/manifest-input.js";
import { renderBootstrapManifests } from "../../agent/src/controllers/k8s/manifest-templates.js";
import { KubeClient } from "../../agent/src/controllers/k8s/kube-client.js";
import type { V1Alpha1Config } from "../../agent/src/config/types/v1alpha1.js";
import type { KubernetesObject } from "../../agent/src/resources/catalog/k8s-manifests.js";
import { generateSelfSignedCA, issueCertificate } from "../../agent/src/pki/index.js";
import { logger } from "../../agent/src/log.js";

const repo = path.resolve(import.meta.dirname, "../../..");
const apiserverBin = process.env.KUBE_APISERVER_BIN ?? path.resolve(repo, "../images/_out/k8s/amd64/kube-apiserver");
const etcdBin = process.env.ETCD_BIN ?? (existsSync(path.join(repo, "_out/k8s/amd64/etcd")) ? path.join(repo, "_out/k8s/amd64/etcd") : "/work/main/_out/k8s/amd64/etcd");
const skip = !existsSync(apiserverBin) ? `kube-apiserver not built at ${apiserverBin} (set KUBE_APISERVER_BIN)` : !existsSync(etcdBin) ? `etcd not built at ${etcdBin} (bash scripts/go-component.sh etcd amd64)` : false;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function start(bin: string, args: string[], procs: ChildProcess[], out: string[]): void {
  const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  p.stdout!.on("data", (d: Buffer) => out.push(d.toString()));
  p.stderr!.on("data", (d: Buffer) => out.push(d.toString()));
  procs.push(p);
}

/** Resolves once GET /readyz answers 200 (the API server's own readiness). */
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

const config: V1Alpha1Config = {
  machine: { type: "controlplane", features: { kubePrism: { enabled: true, port: 7445 } } },
  cluster: { controlPlane: { endpoint: "https://127.0.0.1:6443" }, token: "3xpfxm.8sa7xd2dc4kf5xyq", apiServer: { disablePodSecurityPolicy: true } },
};

test("manifests applied to a real kube-apiserver: created once, never updated, a bad object reported", { skip, timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "manifest-apply-"));
  const procs: ChildProcess[] = [];
  const out: string[] = [];
  t.after(() => {
    for (const p of procs) p.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  const ca = await generateSelfSignedCA({ commonName: "kubernetes", algorithm: "ecdsa-p256" });
  const serving = await issueCertificate(ca, { commonName: "kube-apiserver", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], extKeyUsage: ["serverAuth"], lifetimeMs: 3_600_000, algorithm: "ecdsa-p256" });
  const admin = await issueCertificate(ca, { commonName: "admin", organizations: ["system:masters"], extKeyUsage: ["clientAuth"], lifetimeMs: 3_600_000, algorithm: "ecdsa-p256" });
  const sa = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const file = (name: string, text: string): string => (writeFileSync(path.join(dir, name), text), path.join(dir, name));
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  start(etcdBin, ["--data-dir", path.join(dir, "etcd"), "--listen-client-urls", `http://127.0.0.1:${etcdPort}`, "--advertise-client-urls", `http://127.0.0.1:${etcdPort}`, "--listen-peer-urls", `http://127.0.0.1:${peerPort}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPort}`, "--initial-cluster", `default=http://127.0.0.1:${peerPort}`], procs, out);
  start(apiserverBin, [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
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
    "--allow-privileged=true",
  ], procs, out);
  const client = new KubeClient({ server: `https://127.0.0.1:${apiPort}`, ca: ca.certPem, cert: admin.certPem, key: admin.keyPem });
  t.after(() => client.close());
  await untilReady(client, procs, 180_000).catch((err) => assert.fail(`API server not ready: ${String(err)}\n${out.join("").slice(-3000)}`));

  const manifests = renderBootstrapManifests(bootstrapManifestsInput(config)!);
  // A namespaced object listed before its Namespace (the apply puts namespaces first), and one kind no server serves.
  const extra: KubernetesObject[] = [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "demo" }, data: { a: "1" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } },
    { apiVersion: "example.org/v1", kind: "Widget", metadata: { name: "bad" } },
  ];
  const objects = [...manifests.flatMap((m) => m.objects), ...extra];
  const log = logger("test");
  const first = await applyObjects(client, objects, log).then(() => assert.fail("the bad object was not reported"), (err: unknown) => err);
  assert.ok(first instanceof ManifestApplyError);
  assert.deepEqual(first.failures.length, 1, first.failures.join("\n"));
  assert.match(first.failures[0]!, /^error creating mapping for object example.org\/v1\/Widget\/bad: /);

  const versions = new Map<string, string>();
  for (const obj of objects.slice(0, -1)) {
    const m = await client.mapping(String(obj.apiVersion), String(obj.kind));
    const meta = obj.metadata as { name: string; namespace?: string };
    const got = await client.request<KubernetesObject>("GET", `${KubeClient.collectionPath(m, meta.namespace)}/${encodeURIComponent(meta.name)}`);
    const gotMeta = got.metadata as { resourceVersion: string; managedFields?: { manager: string }[] };
    // The API server lists no managed fields for an object with nothing but metadata (a bare ServiceAccount).
    assert.ok((gotMeta.managedFields ?? []).every((f) => f.manager === "talos"), `${String(obj.kind)}/${meta.name} created by field manager talos`);
    versions.set(`${String(obj.kind)}/${meta.namespace ?? ""}/${meta.name}`, gotMeta.resourceVersion);
  }
  assert.equal(versions.size, objects.length - 1);

  const second = await applyObjects(client, objects, log).catch((err: unknown) => err);
  assert.ok(second instanceof ManifestApplyError && second.failures.length === 1);
  for (const obj of objects.slice(0, -1)) {
    const m = await client.mapping(String(obj.apiVersion), String(obj.kind));
    const meta = obj.metadata as { name: string; namespace?: string };
    const got = await client.request<KubernetesObject>("GET", `${KubeClient.collectionPath(m, meta.namespace)}/${encodeURIComponent(meta.name)}`);
    assert.equal((got.metadata as { resourceVersion: string }).resourceVersion, versions.get(`${String(obj.kind)}/${meta.namespace ?? ""}/${meta.name}`), `${String(obj.kind)}/${meta.name} unchanged`);
  }
});
