// RPC latency over loopback against the sandbox (machined + apid): maintenance
// mode (insecure TLS) storage.Disks and COSI List, then, after applying a
// generated config, over mTLS: Version, ServiceList, COSI Get MachineConfig, the observation RPCs and
// a one-to-many Version (`nodes: 127.0.0.1 x K`, apid fans out to itself).
// First the floors: a bare grpc-js mutual-TLS round trip with no agent, in this process and through a relay process
// to a server process as a call goes through apid to machined (bench/bare-grpc.ts).
// Each method: N calls one after another, then N calls with C in flight.
// Prints p50/p90/p99/max in ms, calls/s and the agent's CPU time per call
// (machined + apid, from /proc/<pid>/stat); figures only, no thresholds.
//
// usage: node dist/bench/rpc-latency.js [--calls 500] [--concurrency 8] [--fanout 4] [--only TEXT] [--apid-in-process] [--bundle]
//   --only measures just the methods whose row name holds TEXT (e.g. "Version (mTLS)"), for profiling one path.
//   machined runs with the agent's node flags and environment (agentNodeFlags, agentEnv in
//   agent/src/cmd/machined-run.ts), as init starts it; BENCH_NODE_FLAGS replaces machined's
//   node flags, BASALT_APID_NODE_FLAGS apid's, MALLOC_ARENA_MAX the arena cap of both.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { NodeClient, type ClientCredentials } from "../agent/src/client/client.js";
import { parseTalosconfig } from "../agent/src/client/talosconfig.js";
import { generateConfigs } from "../agent/src/config/generate/index.js";
import { startBareChain, startBareEcho } from "./bare-grpc.js";
import { entry, eventually, freePort, nodeFlags, sandboxEnv, startSandbox, useBundle } from "./sandbox.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const calls = Math.max(1, Math.min(5000, Number(arg("calls", "500"))));
const concurrency = Math.max(1, Math.min(64, Number(arg("concurrency", "8"))));
const fanout = Math.max(1, Math.min(16, Number(arg("fanout", "4"))));
const inProcess = process.argv.includes("--apid-in-process");
const only = arg("only", "");
/** The process and its descendants (apid is machined's child). */
function processTree(root: number): number[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const t of readdirSync(`/proc/${out[i]}/task`)) {
        const kids = readFileSync(`/proc/${out[i]}/task/${t}/children`, "utf8").trim();
        if (kids) out.push(...kids.split(/\s+/).map(Number));
      }
    } catch {
      /* gone */
    }
  }
  return out;
}

const ticksPerSecond = 100; // USER_HZ on Linux
/**
 * CPU seconds (user + system) the agent's processes have used: per-call CPU
 * is much less disturbed by other load on a shared host than wall-clock latency.
 */
function agentCpuSeconds(): number {
  let ticks = 0;
  for (const pid of processTree(sandbox.child.pid!)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]); // utime, stime (fields 14, 15)
    } catch {
      /* gone */
    }
  }
  return ticks / ticksPerSecond;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Runs `call` n times with `inFlight` concurrent callers; returns per-call ms and the wall time. */
async function run(
  call: () => Promise<unknown>,
  n: number,
  inFlight: number,
): Promise<{ ms: number[]; wallMs: number }> {
  const ms: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < n) {
      next++;
      const t0 = performance.now();
      await call();
      ms.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { ms, wallMs: performance.now() - started };
}

const rows: string[][] = [];
async function measure(name: string, call: () => Promise<unknown>): Promise<void> {
  if (!name.includes(only)) return;
  // Warm up connections and JIT, so the figures are the steady state.
  for (let i = 0; i < 20; i++) await call();
  for (const c of [1, concurrency]) {
    const cpu0 = agentCpuSeconds();
    const { ms, wallMs } = await run(call, calls, c);
    const cpuMsPerCall = ((agentCpuSeconds() - cpu0) * 1000) / calls;
    ms.sort((a, b) => a - b);
    const f = (v: number) => v.toFixed(2);
    rows.push([
      name,
      String(c),
      String(calls),
      f(quantile(ms, 0.5)),
      f(quantile(ms, 0.9)),
      f(quantile(ms, 0.99)),
      f(ms.at(-1)!),
      ((calls * 1000) / wallMs).toFixed(0),
      f(cpuMsPerCall),
    ]);
  }
}

function print(): void {
  const head = ["method", "conc", "calls", "p50 ms", "p90 ms", "p99 ms", "max ms", "calls/s", "agent CPU ms/call"];
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  for (const r of all)
    console.log(r.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join("  "));
}

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-rpc-"));
const port = await freePort();
const endpoint = `127.0.0.1:${port}`;
const generated = await generateConfigs({
  clusterName: "bench",
  endpoint: "https://127.0.0.1:6443",
  installDisk: "",
  talosconfigEndpoints: [endpoint],
});
const ctx = parseTalosconfig(generated.talosconfig);
const admin: ClientCredentials = { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key };
const sandbox = startSandbox(stateDir, port, inProcess);
const clients: NodeClient[] = [];
try {
  console.log(
    `node ${process.version}, ${useBundle ? `bundle ${entry()[0]}` : "dist/"}, apid ${inProcess ? "in machined's process" : "separate process"}, ` +
      `${calls} calls per method, sequential and ${concurrency} in flight, loopback, machined node flags: [${nodeFlags.join(" ")}], MALLOC_ARENA_MAX=${sandboxEnv["MALLOC_ARENA_MAX"]}` +
      `${process.env["BASALT_APID_NODE_FLAGS"] !== undefined ? `, apid flags: ${process.env["BASALT_APID_NODE_FLAGS"]}` : ""}`,
  );
  const insecure = new NodeClient({ endpoint, credentials: { kind: "insecure" } });
  clients.push(insecure);
  await eventually(() => insecure.disks());
  // The floor: the same round trip with no agent in it (its agent CPU column is the sandbox idling in maintenance).
  const bare = await startBareEcho();
  try {
    await measure("bare grpc-js unary (mTLS, no agent)", () => bare.call());
  } finally {
    bare.close();
  }
  // The floor in the shape of the apid path: two hops through two more processes (apid's, machined's).
  const chain = await startBareChain();
  try {
    await measure("bare grpc-js, relay + server processes", () => chain.call());
  } finally {
    chain.close();
  }
  await measure("maintenance storage.Disks (insecure)", () => insecure.disks());
  await measure("maintenance COSI List Namespaces (insecure)", () =>
    insecure.resourceList("meta", "Namespaces.meta.cosi.dev"),
  );

  await insecure.applyConfiguration(generated.controlplane);
  const mtls = new NodeClient({ endpoint, credentials: admin });
  clients.push(mtls);
  await eventually(() => mtls.version());
  await measure("Version (mTLS)", () => mtls.version());
  await measure("ServiceList (mTLS)", () => mtls.serviceList());
  await measure("COSI Get MachineConfig (mTLS)", () =>
    mtls.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1"),
  );
  // The observation RPCs the dashboard and `talosctl support` call (each reads /proc when called).
  for (const method of ["Memory", "LoadAvg", "SystemStat", "CPUInfo", "NetworkDeviceStats", "DiskStats", "Processes"]) {
    await measure(`${method} (mTLS)`, () => mtls.unary(mtls.machine, method));
  }
  await measure("Netstat listening TCP with pids (mTLS)", () =>
    mtls.unary(mtls.machine, "Netstat", {
      filter: 2,
      feature: { pid: true },
      l4proto: { tcp: true, tcp6: true },
      netns: { hostnetwork: true },
    }),
  );
  const many = new NodeClient({
    endpoint,
    credentials: admin,
    nodes: Array.from({ length: fanout }, () => "127.0.0.1"),
  });
  clients.push(many);
  const reply = (await many.version()) as { messages: unknown[] };
  if (reply.messages.length === fanout) {
    await measure(`Version nodes=127.0.0.1 x${fanout} (mTLS fan-out)`, () => many.version());
  } else {
    console.log(`fan-out to self not measured: ${reply.messages.length} replies for ${fanout} nodes`);
  }
  print();
} finally {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
