// apid acting for the cluster: three sandboxes (two control-plane nodes and a
// worker, from one `gen config`), each in its own network namespace on one bridge
// with apid on <its ip>:50000. Fan-out of unary and streamed calls, a stopped node
// reported beside the others' answers, `-n` naming the node itself, roles and
// refused certificates, all through real processes and real TLS.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { NodeClient, type ClientOptions } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs, type GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { issueClientCredentials } from "../../agent/src/config/generate/talosconfig.js";
import { generateSelfSignedCA, issueCertificate, loadCertificateAndKey } from "../../agent/src/pki/index.js";
import { eventually } from "./helpers/sandbox.js";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");
const SUBNET = "10.214.7";
const tag = randomBytes(3).toString("hex");
const bridge = `bmb${tag}`;

interface Member {
  name: string;
  hostname: string;
  address: string;
  kind: "controlplane" | "worker";
  ns: string;
  out: string;
  child?: ChildProcess;
}

const members: Member[] = [
  { name: "cp1", hostname: "basalt-cp-1", address: `${SUBNET}.1`, kind: "controlplane", ns: `bm-1-${tag}`, out: "" },
  { name: "cp2", hostname: "basalt-cp-2", address: `${SUBNET}.2`, kind: "controlplane", ns: `bm-2-${tag}`, out: "" },
  { name: "worker", hostname: "basalt-worker-3", address: `${SUBNET}.3`, kind: "worker", ns: `bm-3-${tag}`, out: "" },
];
const [cp1, cp2, worker] = members as [Member, Member, Member];

function unsupported(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root for network namespaces";
  try {
    execFileSync("ip", ["netns", "list"], { stdio: "ignore" });
  } catch {
    return "`ip netns` is not available";
  }
  return undefined;
}
const skip = unsupported();
const ip = (...args: string[]) => execFileSync("ip", args, { encoding: "utf8" });

let root = "";
let generated: GeneratedConfigs;
let admin: { ca: string; crt: string; key: string };
const clients: NodeClient[] = [];

/** The generated config of `m`'s kind with its hostname set (machine.network is `{}` as `gen config` writes it). */
function configFor(m: Member): string {
  const base = m.kind === "controlplane" ? generated.controlplane : generated.worker;
  const patched = base.replace(/^ {4}network: \{\}$/m, `    network:\n        hostname: ${m.hostname}`);
  assert.notEqual(patched, base, "machine.network found in the generated config");
  return patched;
}

function start(m: Member): void {
  const stateDir = path.join(root, m.name);
  mkdirSync(path.join(stateDir, "system", "state"), { recursive: true });
  // As if applied before: the node boots straight into its configuration.
  writeFileSync(path.join(stateDir, "system", "state", "config.yaml"), configFor(m));
  const args = ["netns", "exec", m.ns, process.execPath, sandboxJs, "--state-dir", stateDir, "--apid-listen", `${m.address}:50000`, "--trustd-listen", `${m.address}:50001`];
  const child = spawn("ip", args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, BASALT_LOG_LEVEL: "info" } });
  child.stdout!.on("data", (b: Buffer) => (m.out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (m.out += b.toString()));
  process.once("exit", () => child.kill("SIGKILL"));
  m.child = child;
}

async function stop(m: Member): Promise<void> {
  const child = m.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await gone;
  clearTimeout(timer);
}

function client(endpoint: string, creds: { ca: string; crt: string; key: string }, route: Pick<ClientOptions, "node" | "nodes"> = {}): NodeClient {
  const c = new NodeClient({ endpoint, credentials: { kind: "mtls", ...creds }, ...route });
  clients.push(c);
  return c;
}

const logTails = () => members.map((m) => `--- ${m.name}:\n${m.out.split("\n").slice(-25).join("\n")}`).join("\n");

interface Tagged {
  metadata?: { hostname?: string; error?: string } | null;
}

before(async () => {
  if (skip) return;
  root = mkdtempSync(path.join(os.tmpdir(), "basalt-multinode-"));
  chmodSync(root, 0o755);
  generated = await generateConfigs({ clusterName: "multinode", endpoint: `https://${cp1.address}:6443`, installDisk: "" });
  const ctx = parseTalosconfig(generated.talosconfig);
  admin = { ca: ctx.ca, crt: ctx.crt, key: ctx.key };
  ip("link", "add", bridge, "type", "bridge");
  ip("addr", "add", `${SUBNET}.254/24`, "dev", bridge);
  ip("link", "set", bridge, "up");
  members.forEach((m, i) => {
    ip("netns", "add", m.ns);
    ip("-n", m.ns, "link", "set", "lo", "up");
    ip("link", "add", `bmv${tag}${i}`, "type", "veth", "peer", "name", "eth0", "netns", m.ns);
    ip("link", "set", `bmv${tag}${i}`, "master", bridge, "up");
    ip("-n", m.ns, "addr", "add", `${m.address}/24`, "dev", "eth0");
    ip("-n", m.ns, "link", "set", "eth0", "up");
  });
  for (const m of members) start(m);
  // Every node serves mTLS with its configured hostname (the worker once trustd signed its certificate).
  for (const m of members) {
    const c = client(`${m.address}:50000`, admin);
    await eventually(async () => {
      const hostname = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as { resource: { spec: { yaml_spec: string } } };
      assert.match(hostname.resource.spec.yaml_spec, new RegExp(`hostname: ${m.hostname}`));
    }, 600).catch((err: Error) => {
      throw new Error(`${m.name} did not come up: ${err.message}\n${logTails()}`);
    });
  }
});

after(async () => {
  for (const c of clients) c.close();
  await Promise.all(members.map(stop));
  if (skip) return;
  for (const m of members) execFileSync("ip", ["netns", "del", m.ns], { stdio: "ignore" });
  execFileSync("ip", ["link", "del", bridge], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

test("Version fanned out to all three nodes: one message per node, tagged with the target", { skip, timeout: 60_000 }, async () => {
  const targets = members.map((m) => m.address);
  const all = client(`${cp1.address}:50000`, admin, { nodes: targets });
  const reply = (await all.version()) as { messages: (Tagged & { version?: { tag?: string } })[] };
  assert.deepEqual(reply.messages.map((m) => m.metadata?.hostname), targets);
  for (const m of reply.messages) {
    assert.ok(!m.metadata?.error, m.metadata?.error);
    assert.ok(m.version?.tag, "each node answered with its version");
  }
});

test("-n naming the node itself by IP, hostname and IP:port is served locally (the worker cannot forward)", { skip, timeout: 60_000 }, async () => {
  for (const self of [worker.address, worker.hostname, `${worker.address}:50000`]) {
    const one = client(`${worker.address}:50000`, admin, { node: self });
    const reply = (await one.version()) as { messages: Tagged[] };
    assert.equal(reply.messages.length, 1, self);
    assert.ok(!reply.messages[0]!.metadata?.hostname, `${self}: one-to-one local replies are not tagged`);
    const many = client(`${worker.address}:50000`, admin, { nodes: [self] });
    assert.equal(((await many.version()) as { messages: unknown[] }).messages.length, 1, self);
  }
  // A worker has no client certificate: it does not forward to another node.
  const elsewhere = client(`${worker.address}:50000`, admin, { node: cp2.address });
  await assert.rejects(elsewhere.version(), (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "no request forwarding");
  // A control-plane node forwards one-to-one by IP or hostname-free target.
  const viaCp = client(`${cp1.address}:50000`, admin, { node: worker.address });
  const hostname = (await viaCp.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as { resource: { spec: { yaml_spec: string } } };
  assert.match(hostname.resource.spec.yaml_spec, new RegExp(`hostname: ${worker.hostname}`), "the COSI call reached the worker");
});

test("a streamed call fanned out to two nodes interleaves both nodes' messages", { skip, timeout: 60_000 }, async () => {
  const two = client(`${cp1.address}:50000`, admin, { nodes: [cp1.address, cp2.address] });
  const messages = await two.collect<Tagged & { bytes?: Buffer }>(two.machine, "Dmesg", { follow: false, tail: false });
  const hosts = new Set(messages.map((m) => m.metadata?.hostname));
  assert.deepEqual([...hosts].sort(), [cp1.address, cp2.address].sort());
  assert.ok(messages.every((m) => !m.metadata?.error), messages.find((m) => m.metadata?.error)?.metadata?.error);
});

test("a reader certificate reads, fanned out too, but cannot reboot or read the machine config", { skip, timeout: 60_000 }, async () => {
  const reader = await issueClientCredentials(generated.secrets, { roles: ["os:reader"] });
  const creds = { ca: reader.caPem, crt: reader.certPem, key: reader.keyPem };
  const all = client(`${cp1.address}:50000`, creds, { nodes: [cp1.address, cp2.address] });
  assert.equal(((await all.version()) as { messages: Tagged[] }).messages.length, 2);
  const denied = (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "not authorized";
  await assert.rejects(client(`${cp1.address}:50000`, creds).reboot(), denied);
  await assert.rejects(client(`${cp1.address}:50000`, creds).resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1"), denied);
  // Forwarded calls carry the reader's roles, not the forwarding node's.
  await assert.rejects(client(`${cp1.address}:50000`, creds, { node: cp2.address }).resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1"), denied);
});

test("certificates from another CA, expired ones and ones without client auth are refused", { skip, timeout: 60_000 }, async () => {
  const otherCA = await generateSelfSignedCA({ organizations: ["talos"] });
  const foreign = await issueCertificate(otherCA, { organizations: ["os:admin"], extKeyUsage: ["clientAuth"], lifetimeMs: 3600_000 });
  const expired = await issueClientCredentials(generated.secrets, { lifetimeMs: 3600_000, now: new Date(Date.now() - 48 * 3600_000) });
  const osCA = await loadCertificateAndKey(generated.secrets.certs.os.crt, generated.secrets.certs.os.key);
  const serverOnly = await issueCertificate(osCA, { organizations: ["os:admin"], extKeyUsage: ["serverAuth"], lifetimeMs: 3600_000 });
  const refused = (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.UNAUTHENTICATED;
  for (const [what, crt, key] of [
    ["another CA", foreign.certPem, foreign.keyPem],
    ["expired", expired.certPem, expired.keyPem],
    ["no client auth", serverOnly.certPem, serverOnly.keyPem],
  ] as const) {
    await assert.rejects(client(`${cp1.address}:50000`, { ca: admin.ca, crt, key }).version(), refused, what);
  }
});

test("with one node stopped, a fan-out answers for the other two and an error entry for it within the per-target deadline", { skip, timeout: 90_000 }, async () => {
  await stop(cp2);
  const targets = members.map((m) => m.address);
  const all = client(`${cp1.address}:50000`, admin, { nodes: targets });
  const started = Date.now();
  const reply = (await all.version()) as { messages: (Tagged & { version?: { tag?: string } })[] };
  const took = Date.now() - started;
  assert.deepEqual(reply.messages.map((m) => m.metadata?.hostname), targets);
  const [a, b, c] = reply.messages;
  assert.ok(a!.version?.tag && c!.version?.tag, "the running nodes answered");
  assert.ok(b!.metadata?.error, "the stopped node is an error entry");
  assert.ok(took < 11_000, `answered in ${took} ms (per-target deadline 10 s)`);
});
