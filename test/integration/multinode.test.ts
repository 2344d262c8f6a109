// apid acting for the cluster: three sandboxes (two control-plane nodes and a
// worker, from one `gen config`), each in its own network namespace on one bridge
// with apid on <its ip>:50000. Fan-out of unary and streamed calls, a stopped node
// reported beside the others' answers, `-n` naming the node itself, roles and
// refused certificates, all through real processes and real TLS.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { NodeClient, type ClientOptions } from "../../agent/src/client/client.js";
import { issueClientCredentials } from "../../agent/src/config/generate/talosconfig.js";
import { generateSelfSignedCA, issueCertificate, loadCertificateAndKey } from "../../agent/src/pki/index.js";
import { freeSubnet } from "./helpers/netns.js";
import { eventually } from "./helpers/sandbox.js";
import { readSlowly } from "./helpers/slow-reader.js";
import { clusterUnsupported, startCluster, type Cluster, type Member } from "./multinode-cluster.js";

const skip = clusterUnsupported();
let cluster: Cluster;
let cp1: Member, cp2: Member, worker: Member, members: Member[];
let admin: Cluster["admin"];
const clients: NodeClient[] = [];

function client(
  endpoint: string,
  creds: { ca: string; crt: string; key: string },
  route: Pick<ClientOptions, "node" | "nodes"> = {},
): NodeClient {
  const c = new NodeClient({ endpoint, credentials: { kind: "mtls", ...creds }, ...route });
  clients.push(c);
  return c;
}

interface Tagged {
  metadata?: { hostname?: string; error?: string } | null;
}

before(async () => {
  if (skip) return;
  cluster = await startCluster(freeSubnet("10.214", 7), [
    { name: "cp1", hostname: "basalt-cp-1", kind: "controlplane" },
    { name: "cp2", hostname: "basalt-cp-2", kind: "controlplane" },
    { name: "worker", hostname: "basalt-worker-3", kind: "worker" },
  ]);
  members = cluster.members;
  [cp1, cp2, worker] = members as [Member, Member, Member];
  admin = cluster.admin;
  // Every node serves mTLS with its configured hostname (the worker once trustd signed its certificate).
  for (const m of members) {
    const c = client(`${m.address}:50000`, admin);
    await eventually(async () => {
      const hostname = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as {
        resource: { spec: { yaml_spec: string } };
      };
      assert.match(hostname.resource.spec.yaml_spec, new RegExp(`hostname: ${m.hostname}`));
    }, 600).catch((err: Error) => {
      throw new Error(`${m.name} did not come up: ${err.message}\n${cluster.logTails()}`);
    });
  }
});

after(async () => {
  for (const c of clients) c.close();
  await cluster?.close();
});

test("Version fanned out to all three nodes: one message per node, tagged with the target", {
  skip,
  timeout: 60_000,
}, async () => {
  const targets = members.map((m) => m.address);
  const all = client(`${cp1.address}:50000`, admin, { nodes: targets });
  const reply = (await all.version()) as { messages: (Tagged & { version?: { tag?: string } })[] };
  assert.deepEqual(
    reply.messages.map((m) => m.metadata?.hostname),
    targets,
  );
  for (const m of reply.messages) {
    assert.ok(!m.metadata?.error, m.metadata?.error);
    assert.ok(m.version?.tag, "each node answered with its version");
  }
});

test("-n naming the node itself by IP and hostname is served locally (the worker cannot forward); with a port it is refused", {
  skip,
  timeout: 60_000,
}, async () => {
  for (const self of [worker.address, worker.hostname]) {
    const one = client(`${worker.address}:50000`, admin, { node: self });
    const reply = (await one.version()) as { messages: Tagged[] };
    assert.equal(reply.messages.length, 1, self);
    assert.ok(!reply.messages[0]!.metadata?.hostname, `${self}: one-to-one local replies are not tagged`);
    const many = client(`${worker.address}:50000`, admin, { nodes: [self] });
    assert.equal(((await many.version()) as { messages: unknown[] }).messages.length, 1, self);
  }
  // A worker has no client certificate: it does not forward to another node, nor to itself named with a port,
  // which Talos's apid compares with its names as it is; a control plane refuses a target naming a port outright.
  for (const node of [cp2.address, `${worker.address}:50000`]) {
    const elsewhere = client(`${worker.address}:50000`, admin, { node });
    await assert.rejects(
      elsewhere.version(),
      (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "no request forwarding",
      node,
    );
  }
  const withPort = client(`${cp1.address}:50000`, admin, { nodes: [`${cp1.address}:50000`] });
  await assert.rejects(
    withPort.version(),
    (e: grpc.ServiceError) => e.code === grpc.status.INTERNAL && e.details === `invalid target "${cp1.address}:50000"`,
  );
  // A control-plane node forwards one-to-one by IP or hostname-free target.
  const viaCp = client(`${cp1.address}:50000`, admin, { node: worker.address });
  const hostname = (await viaCp.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as {
    resource: { spec: { yaml_spec: string } };
  };
  assert.match(
    hostname.resource.spec.yaml_spec,
    new RegExp(`hostname: ${worker.hostname}`),
    "the COSI call reached the worker",
  );
});

test("a streamed call fanned out to two nodes interleaves both nodes' messages", {
  skip,
  timeout: 60_000,
}, async () => {
  const two = client(`${cp1.address}:50000`, admin, { nodes: [cp1.address, cp2.address] });
  const once = await two.collect<Tagged & { bytes?: Buffer }>(two.machine, "Dmesg", { follow: false, tail: false });
  assert.deepEqual([...new Set(once.map((m) => m.metadata?.hostname))].sort(), [cp1.address, cp2.address].sort());
  assert.ok(
    once.every((m) => !m.metadata?.error),
    once.find((m) => m.metadata?.error)?.metadata?.error,
  );
  // Followed streams never end: messages of both nodes arriving on one open stream are interleaved by construction.
  const seen = new Set<string>();
  const stream: grpc.ClientReadableStream<Tagged> = two.machine.Dmesg({ follow: true, tail: false }, two.metadata());
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${[...seen].join(", ")} streamed within 20 s`)), 20_000);
    stream.on("data", (m: Tagged) => {
      if (m.metadata?.error) return reject(new Error(m.metadata.error));
      seen.add(m.metadata?.hostname ?? "");
      if (seen.has(cp1.address) && seen.has(cp2.address)) {
        clearTimeout(timer);
        resolve();
      }
    });
    stream.on("error", (e: grpc.ServiceError) => e.code !== grpc.status.CANCELLED && reject(e));
    stream.on("end", () => reject(new Error("a followed stream ended")));
  }).finally(() => stream.cancel());
});

test("streams fanned out to all three nodes, read slowly: each node's share exactly as its machined's socket sends it", {
  skip,
  timeout: 120_000,
}, async () => {
  const tree = mkdtempSync(path.join(os.tmpdir(), "basalt-fanout-"));
  try {
    for (let f = 0; f < 400; f++) writeFileSync(path.join(tree, `f${f}`), "y".repeat(f));
    const file = path.join(tree, "blob");
    const blob = randomBytes(3 * 1024 * 1024);
    writeFileSync(file, blob);
    const all = client(`${cp1.address}:50000`, admin, { nodes: members.map((m) => m.address) });
    type Entry = Tagged & { name?: string; size?: number; bytes?: Buffer };
    const byNode = (msgs: Entry[]) => {
      assert.ok(
        msgs.every((m) => !m.metadata?.error),
        msgs.find((m) => m.metadata?.error)?.metadata?.error,
      );
      const out = new Map<string, Entry[]>();
      for (const m of msgs) out.set(m.metadata!.hostname!, [...(out.get(m.metadata!.hostname!) ?? []), m]);
      return out;
    };
    for (let round = 0; round < 3; round++) {
      const listed = byNode(
        await readSlowly<Entry>(all, all.machine, "List", { root: tree, recurse: true }, { every: 25, ms: 3 }),
      );
      const read = byNode(await readSlowly<Entry>(all, all.machine, "Read", { path: file }, { every: 3, ms: 5 }));
      for (const m of members) {
        const socket = new NodeClient({
          endpoint: `unix:${path.join(m.stateDir, "system", "run", "machined", "machine.sock")}`,
          credentials: { kind: "socket", roles: ["os:admin"] },
        });
        clients.push(socket);
        const truth = await socket.collect<Entry>(socket.machine, "List", { root: tree, recurse: true });
        assert.equal(truth.length, 402);
        assert.deepEqual(
          listed.get(m.address)?.map((e) => [e.name, e.size]),
          truth.map((e) => [e.name, e.size]),
          `${m.name} round ${round}: List`,
        );
        const chunks = read.get(m.address) ?? [];
        assert.equal(
          chunks.length,
          (await socket.collect<Entry>(socket.machine, "Read", { path: file })).length,
          `${m.name} round ${round}: Read messages`,
        );
        assert.ok(Buffer.concat(chunks.map((c) => c.bytes!)).equals(blob), `${m.name} round ${round}: Read bytes`);
      }
    }
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
});

test("a reader certificate reads, fanned out too, but cannot reboot or read the machine config", {
  skip,
  timeout: 60_000,
}, async () => {
  const reader = await issueClientCredentials(cluster.generated.secrets, { roles: ["os:reader"] });
  const creds = { ca: reader.caPem, crt: reader.certPem, key: reader.keyPem };
  const all = client(`${cp1.address}:50000`, creds, { nodes: [cp1.address, cp2.address] });
  assert.equal(((await all.version()) as { messages: Tagged[] }).messages.length, 2);
  const denied = (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "not authorized";
  await assert.rejects(client(`${cp1.address}:50000`, creds).reboot(), denied);
  await assert.rejects(
    client(`${cp1.address}:50000`, creds).resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1"),
    denied,
  );
  // Forwarded calls carry the reader's roles, not the forwarding node's.
  await assert.rejects(
    client(`${cp1.address}:50000`, creds, { node: cp2.address }).resourceGet(
      "config",
      "MachineConfigs.config.talos.dev",
      "v1alpha1",
    ),
    denied,
  );
});

test("certificates from another CA, expired ones and ones without client auth are refused", {
  skip,
  timeout: 60_000,
}, async () => {
  const otherCA = await generateSelfSignedCA({ organizations: ["talos"] });
  const foreign = await issueCertificate(otherCA, {
    organizations: ["os:admin"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3600_000,
  });
  const expired = await issueClientCredentials(cluster.generated.secrets, {
    lifetimeMs: 3600_000,
    now: new Date(Date.now() - 48 * 3600_000),
  });
  const osCA = await loadCertificateAndKey(
    cluster.generated.secrets.certs.os.crt,
    cluster.generated.secrets.certs.os.key,
  );
  const serverOnly = await issueCertificate(osCA, {
    organizations: ["os:admin"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  const refused = (e: grpc.ServiceError) =>
    e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.UNAUTHENTICATED;
  for (const [what, crt, key] of [
    ["another CA", foreign.certPem, foreign.keyPem],
    ["expired", expired.certPem, expired.keyPem],
    ["no client auth", serverOnly.certPem, serverOnly.keyPem],
  ] as const) {
    await assert.rejects(client(`${cp1.address}:50000`, { ca: admin.ca, crt, key }).version(), refused, what);
  }
});

test("with one node stopped, a fan-out answers for the other two and an error entry for it within the per-target deadline", {
  skip,
  timeout: 90_000,
}, async () => {
  await cluster.stop(cp2);
  const targets = members.map((m) => m.address);
  const all = client(`${cp1.address}:50000`, admin, { nodes: targets });
  const started = Date.now();
  const reply = (await all.version()) as { messages: (Tagged & { version?: { tag?: string } })[] };
  const took = Date.now() - started;
  assert.deepEqual(
    reply.messages.map((m) => m.metadata?.hostname),
    targets,
  );
  const [a, b, c] = reply.messages;
  assert.ok(a!.version?.tag && c!.version?.tag, "the running nodes answered");
  assert.ok(b!.metadata?.error, "the stopped node is an error entry");
  assert.ok(took < 11_000, `answered in ${took} ms (per-target deadline 10 s)`);
});
