// apid fan-out latency: three sandboxes (two control-plane nodes and a worker) in
// network namespaces on one bridge (test/integration/multinode-cluster.ts). Through
// the first node's apid, N sequential Version calls: direct (no node metadata),
// `nodes` naming one other node, and `nodes` naming all three. Prints p50/p99/max
// in ms. Then streams: Read of a 16 MiB file from another node (`node`) and from all
// three (`nodes`), read whole, in MiB/s of what the caller received. Figures only,
// no thresholds. Needs root (network namespaces).
//
// usage: node dist/bench/fanout.js [--calls 200] [--reads 10]
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { NodeClient } from "../agent/src/client/client.js";
import { clusterUnsupported, startCluster } from "../test/integration/multinode-cluster.js";
import { eventually } from "../test/integration/helpers/sandbox.js";

const i = process.argv.indexOf("--calls");
const calls = Math.max(1, Math.min(5000, Number(i > 0 ? process.argv[i + 1] : "200")));
const r = process.argv.indexOf("--reads");
const reads = Math.max(1, Math.min(200, Number(r > 0 ? process.argv[r + 1] : "10")));
const fileMiB = 16;

const why = clusterUnsupported();
if (why) {
  console.log(`fanout: skipped (${why})`);
  process.exit(0);
}

const cluster = await startCluster("10.214.9", [
  { name: "cp1", hostname: "bench-cp-1", kind: "controlplane" },
  { name: "cp2", hostname: "bench-cp-2", kind: "controlplane" },
  { name: "worker", hostname: "bench-worker-3", kind: "worker" },
]);
const clients: NodeClient[] = [];
// The sandboxes share the host's filesystem: every node reads the same file.
const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-fanout-"));
const file = path.join(dir, "blob");
writeFileSync(file, randomBytes(fileMiB * 1024 * 1024));
try {
  const [cp1, cp2] = cluster.members;
  const endpoint = `${cp1!.address}:50000`;
  const all = cluster.members.map((m) => m.address);
  const client = (nodes?: string[], node?: string) => {
    const c = new NodeClient({
      endpoint,
      credentials: { kind: "mtls", ...cluster.admin },
      ...(nodes ? { nodes } : {}),
      ...(node ? { node } : {}),
    });
    clients.push(c);
    return c;
  };
  // Every member answers through the first one before measuring (the worker once trustd signed its certificate).
  const probe = client(all);
  await eventually(async () => {
    const r = (await probe.version()) as { messages: { metadata?: { error?: string } | null }[] };
    const failed = r.messages.filter((m) => m.metadata?.error);
    if (r.messages.length !== all.length || failed.length > 0)
      throw new Error(`not all nodes answer yet: ${failed.map((m) => m.metadata?.error).join("; ")}`);
  }, 600).catch((err: Error) => {
    throw new Error(`${err.message}\n${cluster.logTails()}`);
  });

  const cases: [string, NodeClient][] = [
    ["direct (no nodes)", client()],
    ["nodes: 1 (another node)", client([cp2!.address])],
    ["nodes: 3 (all)", client(all)],
  ];
  console.log(`== apid fan-out latency, Version through ${endpoint}, ${calls} sequential calls (ms)`);
  console.log(["case", "p50", "p99", "max"].join("\t"));
  for (const [name, c] of cases) {
    for (let w = 0; w < 20; w++) await c.version(); // warm: connections and JIT
    const ms: number[] = [];
    for (let n = 0; n < calls; n++) {
      const t = performance.now();
      await c.version();
      ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!.toFixed(2);
    console.log([name, q(0.5), q(0.99), ms.at(-1)!.toFixed(2)].join("\t"));
  }

  const streams: [string, NodeClient, number][] = [
    ["node: another node", client(undefined, cp2!.address), 1],
    ["nodes: 3 (all)", client(all), 3],
  ];
  console.log(
    `== streamed Read of a ${fileMiB} MiB file through ${endpoint}, ${reads} sequential calls (MiB/s received)`,
  );
  console.log(["case", "p50", "min", "max"].join("\t"));
  for (const [name, c, nodes] of streams) {
    const rates: number[] = [];
    for (let n = 0; n < reads + 1; n++) {
      const t = performance.now();
      const chunks = await c.collect<{ bytes?: Buffer; metadata?: { error?: string } | null }>(
        c.machine,
        "Read",
        { path: file },
        120_000,
      );
      const failed = chunks.find((m) => m.metadata?.error);
      if (failed) throw new Error(`${name}: ${failed.metadata!.error}`);
      const bytes = chunks.reduce((sum, m) => sum + (m.bytes?.length ?? 0), 0);
      if (bytes !== nodes * fileMiB * 1024 * 1024)
        throw new Error(`${name}: received ${bytes} bytes of ${nodes} x ${fileMiB} MiB`);
      if (n > 0) rates.push(bytes / 1024 / 1024 / ((performance.now() - t) / 1000)); // the first call warms up
    }
    rates.sort((a, b) => a - b);
    console.log(
      [name, rates[Math.floor(rates.length / 2)]!.toFixed(1), rates[0]!.toFixed(1), rates.at(-1)!.toFixed(1)].join(
        "\t",
      ),
    );
  }
} finally {
  for (const c of clients) c.close();
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
}
