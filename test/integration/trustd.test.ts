// trustd end to end: a control-plane sandbox and a worker sandbox from one
// `gen config`, each in its own network namespace on one bridge. The worker
// starts while the control plane is down, says it waits for trustd, gets its
// API certificate once the control plane's trustd is up, and then serves
// Version over mutual TLS with the generated talosconfig. trustd refuses a
// wrong token with Talos's answer and a garbage CSR with InvalidArgument.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs, type GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { createCSR } from "../../agent/src/pki/index.js";
import { callTrustd } from "../../agent/src/trustd/client.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { eventually, stopProcess } from "./helpers/sandbox.js";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");
const SUBNET = freeSubnet("10.213", 9);
const CP = `${SUBNET}.1`;
const WORKER = `${SUBNET}.2`;
const HOST = `${SUBNET}.254`;

interface Node {
  ns: string;
  child?: ChildProcess;
  out: string;
}

const tag = randomBytes(3).toString("hex");
const bridge = `btb${tag}`;
const nodes: Record<"cp" | "worker", Node> = {
  cp: { ns: `bt-cp-${tag}`, out: "" },
  worker: { ns: `bt-wk-${tag}`, out: "" },
};
let generated: GeneratedConfigs;
let root = "";
const clients: NodeClient[] = [];
const skip = canRunNetns();

/** A namespace joined to the bridge by a veth pair, with `address`/24. */
function addNamespace(node: Node, address: string, i: number): void {
  ip("netns", "add", node.ns);
  ip("-n", node.ns, "link", "set", "lo", "up");
  ip("link", "add", `btv${tag}${i}`, "type", "veth", "peer", "name", "eth0", "netns", node.ns);
  ip("link", "set", `btv${tag}${i}`, "master", bridge, "up");
  ip("-n", node.ns, "addr", "add", `${address}/24`, "dev", "eth0");
  ip("-n", node.ns, "link", "set", "eth0", "up");
}

/** A sandbox in `node`'s namespace whose state directory already holds `config` (as if applied before). */
function startNode(node: Node, name: string, config: string, address: string, extraArgs: string[] = []): void {
  const stateDir = path.join(root, name);
  mkdirSync(path.join(stateDir, "system", "state"), { recursive: true });
  writeFileSync(path.join(stateDir, "system", "state", "config.yaml"), config);
  const args = [
    "netns",
    "exec",
    node.ns,
    process.execPath,
    sandboxJs,
    "--state-dir",
    stateDir,
    "--apid-listen",
    `${address}:50000`,
    "--trustd-listen",
    `${address}:50001`,
    ...extraArgs,
  ];
  const child = spawn("ip", args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, BASALT_LOG_LEVEL: "info" },
  });
  child.stdout!.on("data", (b: Buffer) => (node.out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (node.out += b.toString()));
  process.once("exit", () => child.kill("SIGKILL"));
  node.child = child;
}

async function stopNode(node: Node): Promise<void> {
  if (node.child) await stopProcess(node.child);
}

async function until(what: string, check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) {
      const tails = Object.entries(nodes).map(
        ([name, n]) => `--- ${name}:\n${n.out.split("\n").slice(-30).join("\n")}`,
      );
      throw new Error(`timed out waiting for ${what}\n${tails.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Processes run as the multi-call program's `trustd` (from /proc). */
function trustdProcesses(): number {
  let n = 0;
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    let argv: string[] = [];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (argv.includes("trustd")) n++;
  }
  return n;
}

before(async () => {
  if (skip) return;
  root = mkdtempSync(path.join(os.tmpdir(), "basalt-trustd-"));
  generated = await generateConfigs({
    clusterName: "trustd",
    endpoint: `https://${CP}:6443`,
    installDisk: "",
    talosconfigEndpoints: [WORKER],
  });
  ip("link", "add", bridge, "type", "bridge");
  ip("addr", "add", `${HOST}/24`, "dev", bridge);
  ip("link", "set", bridge, "up");
  addNamespace(nodes.cp, CP, 1);
  addNamespace(nodes.worker, WORKER, 2);
});

after(async () => {
  for (const c of clients) c.close();
  await Promise.all([stopNode(nodes.worker), stopNode(nodes.cp)]);
  if (skip) return;
  for (const n of Object.values(nodes)) execFileSync("ip", ["netns", "del", n.ns], { stdio: "ignore" });
  execFileSync("ip", ["link", "del", bridge], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

test("a worker waits for trustd (whose port is busy at first), gets its certificate from the control plane, then serves mTLS", {
  skip,
  timeout: 180_000,
}, async () => {
  startNode(nodes.worker, "worker", generated.worker, WORKER);
  await until(
    "the worker to say it waits for trustd",
    () => nodes.worker.out.includes(`waiting for a certificate from trustd at ${CP}:50001`),
    60_000,
  );
  assert.doesNotMatch(nodes.worker.out, /api listener ready.*mtls/);

  // The control plane's :50001 is taken when its trustd starts: trustd keeps trying and serves once it is free.
  const holder = spawn(
    "ip",
    [
      "netns",
      "exec",
      nodes.cp.ns,
      process.execPath,
      "-e",
      `require("node:net").createServer().listen(50001, "${CP}", () => console.log("holding"))`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      holder.stdout!.once("data", () => resolve());
      holder.once("exit", (code) => reject(new Error(`port holder exited (${code})`)));
    });
    startNode(nodes.cp, "cp", generated.controlplane, CP);
    await until(
      "trustd to fail its bind",
      () => nodes.cp.out.includes("serving trustd failed, retrying in 1 s"),
      120_000,
    );
  } finally {
    await stopProcess(holder);
  }
  await until(
    "the worker's certificate",
    () => nodes.worker.out.includes("API certificate received from trustd"),
    120_000,
  );

  const ctx = parseTalosconfig(generated.talosconfig);
  const worker = new NodeClient({
    endpoint: `${WORKER}:50000`,
    credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key },
  });
  clients.push(worker);
  const version = (await eventually(() => worker.version(), 150)) as { messages: { version: { tag: string } }[] };
  assert.equal(version.messages.length, 1);
  assert.ok(version.messages[0]!.version.tag);
});

test("trustd refuses a wrong or missing token as Talos does, and a garbage CSR with InvalidArgument", {
  skip,
  timeout: 60_000,
}, async () => {
  await until("trustd on the control plane", () => nodes.cp.out.includes("trustd listening"), 30_000);
  // trustd is served from the control plane's machined process: no process of its own.
  assert.equal(trustdProcesses(), 0);
  const ctx = parseTalosconfig(generated.talosconfig);
  const { csrPem } = await createCSR({ commonName: "intruder", ipAddresses: [HOST] });
  const call = (token: string, csr: string) =>
    callTrustd(`${CP}:50001`, { token, caPem: ctx.ca, csrPem: csr }, AbortSignal.timeout(10_000));

  for (const token of ["000000.0000000000000000", ""]) {
    const err = (await call(token, csrPem).then(
      () => assert.fail("signed without the machine token"),
      (e: grpc.ServiceError) => e,
    )) as grpc.ServiceError;
    assert.equal(err.code, grpc.status.UNKNOWN, `got ${grpc.status[err.code]}: ${err.details}`);
    assert.equal(err.details, "Unauthenticated");
  }
  await until(
    "trustd to log both refusals",
    () =>
      /refused a call without the machine token.*"token":"wrong"/.test(nodes.cp.out) &&
      /refused a call without the machine token.*"token":"missing"/.test(nodes.cp.out),
    5000,
  );

  const token = generated.secrets.trustdInfo.token;
  const garbage = await call(
    token,
    "-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3Ny\n-----END CERTIFICATE REQUEST-----\n",
  ).then(
    () => assert.fail("signed a garbage CSR"),
    (e: grpc.ServiceError) => e,
  );
  assert.equal((garbage as grpc.ServiceError).code, grpc.status.INVALID_ARGUMENT);

  // With the token, a CSR asking for roles gets a server certificate without them.
  const signed = await call(
    token,
    (await createCSR({ commonName: "w", organizations: ["os:admin"], ipAddresses: [HOST] })).csrPem,
  );
  assert.match(signed.crt, /BEGIN CERTIFICATE/);
  assert.equal(signed.ca.trim(), ctx.ca.trim());
});
