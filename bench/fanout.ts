// apid fan-out latency: three sandboxes (two control-plane nodes and a worker) in
// network namespaces on one bridge (test/integration/multinode-cluster.ts). Through
// the first node's apid, N sequential Version calls: direct (no node metadata),
// `nodes` naming one other node, and `nodes` naming all three. Prints p50/p99/max
// in ms; figures only, no thresholds. Needs root (network namespaces).
//
// usage: node dist/bench/fanout.js [--calls 200]
import { performance } from "node:perf_hooks";
import { NodeClient } from "../agent/src/client/client.js";
import { clusterUnsupported, startCluster } from "../test/integration/multinode-cluster.js";
import { eventually } from "../test/integration/helpers/sandbox.js";

const i = process.argv.indexOf("--calls");
const calls = Math.max(1, Math.min(5000, Number(i > 0 ? process.argv[i + 1] : "200")));

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
try {
  const [cp1, cp2] = cluster.members;
  const endpoint = `${cp1!.address}:50000`;
  const all = cluster.members.map((m) => m.address);
  const client = (nodes?: string[]) => {
    const c = new NodeClient({ endpoint, credentials: { kind: "mtls", ...cluster.admin }, ...(nodes ? { nodes } : {}) });
    clients.push(c);
    return c;
  };
  // Every member answers through the first one before measuring (the worker once trustd signed its certificate).
  const probe = client(all);
  await eventually(async () => {
    const r = (await probe.version()) as { messages: { metadata?: { error?: string } | null }[] };
    const failed = r.messages.filter((m) => m.metadata?.error);
    if (r.messages.length !== all.length || failed.length > 0) throw new Error(`not all nodes answer yet: ${failed.map((m) => m.metadata?.error).join("; ")}`);
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
} finally {
  for (const c of clients) c.close();
  await cluster.close();
}
