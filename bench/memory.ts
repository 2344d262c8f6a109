// The agent's memory at idle on this machine: starts the sandbox (machined + apid
// as separate processes, then with apid in machined's process), applies a
// generated config, makes a few calls, waits for idle and prints RSS and PSS
// (from /proc/<pid>/smaps_rollup) of every agent process and their total.
// Figures only, no thresholds.
//
// usage: node dist/bench/memory.js [--mode separate|in-process|both] [--bundle] [--idle-seconds 15]
//   --bundle: run the esbuild bundle (_out/bundle/basalt.mjs, as in the image) instead of dist/.
//   BENCH_NODE_FLAGS="--flag ..." adds node flags to the machined (sandbox) process (for trying levers).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { NodeClient, type ClientCredentials } from "../agent/src/client/client.js";
import { parseTalosconfig } from "../agent/src/client/talosconfig.js";
import { generateConfigs } from "../agent/src/config/generate/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const modeArg = arg("mode", "both");
const useBundle = process.argv.includes("--bundle");
const idleSeconds = Number(arg("idle-seconds", "15"));
const nodeFlags = (process.env["BENCH_NODE_FLAGS"] ?? "").split(/\s+/).filter(Boolean);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function eventually<T>(fn: () => Promise<T>, attempts = 150): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await sleep(200);
    }
  }
  throw last;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function entry(): string[] {
  if (!useBundle) return [path.join(repo, "dist/agent/src/cmd/sandbox.js")];
  const bundle = path.join(repo, "_out/bundle/basalt.mjs");
  if (!existsSync(bundle)) spawnSync(process.execPath, [path.join(repo, "scripts/bundle.mjs")], { stdio: "inherit" });
  return [bundle, "sandbox"];
}

function startSandbox(stateDir: string, port: number, inProcess: boolean): ChildProcess {
  const args = [...nodeFlags, ...entry(), "--state-dir", stateDir, "--apid-listen", `127.0.0.1:${port}`];
  if (inProcess) args.push("--apid-in-process");
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, BASALT_LOG_LEVEL: "warn" } });
  let err = "";
  child.stderr!.on("data", (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
  child.once("exit", (code, signal) => {
    if (code && !stopping.has(child)) process.stderr.write(`sandbox exited (${code ?? signal}):\n${err}\n`);
  });
  return child;
}

const stopping = new Set<ChildProcess>();
async function stop(child: ChildProcess): Promise<void> {
  stopping.add(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** The process and its descendants (apid is machined's child). */
function processTree(root: number): number[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    const pid = out[i]!;
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of tasks) {
      try {
        const kids = readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim();
        if (kids) out.push(...kids.split(/\s+/).map(Number));
      } catch {
        /* task gone */
      }
    }
  }
  return out;
}

interface Mem {
  pid: number;
  name: string;
  rssKiB: number;
  pssKiB: number;
  privateKiB: number;
}

function memoryOf(pid: number): Mem {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const field = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? NaN);
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  const name = argv.includes("apid") ? "apid" : argv.some((a) => a.endsWith("sandbox.js") || a === "sandbox") ? "machined" : path.basename(argv[0] ?? "?");
  return {
    pid,
    name,
    rssKiB: field("Rss"),
    pssKiB: field("Pss"),
    privateKiB: field("Private_Clean") + field("Private_Dirty"),
  };
}

const mib = (kib: number) => (kib / 1024).toFixed(1).padStart(7);

async function measure(inProcess: boolean): Promise<Mem[]> {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-mem-"));
  const port = await freePort();
  const generated = await generateConfigs({
    clusterName: "bench",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
    talosconfigEndpoints: [`127.0.0.1:${port}`],
  });
  const ctx = parseTalosconfig(generated.talosconfig);
  const admin: ClientCredentials = { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key };
  const child = startSandbox(stateDir, port, inProcess);
  const clients: NodeClient[] = [];
  try {
    const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
    clients.push(insecure);
    await eventually(() => insecure.disks());
    await insecure.resourceList("meta", "Namespaces.meta.cosi.dev");
    await insecure.applyConfiguration(generated.controlplane);
    const mtls = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: admin });
    clients.push(mtls);
    await eventually(() => mtls.version());
    for (let i = 0; i < 20; i++) {
      await mtls.version();
      await mtls.serviceList();
      await mtls.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1");
    }
    for (const c of clients) c.close();
    clients.length = 0;
    await sleep(idleSeconds * 1000);
    return processTree(child.pid!).map(memoryOf);
  } finally {
    for (const c of clients) c.close();
    await stop(child);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

function print(title: string, rows: Mem[]): void {
  console.log(`== ${title}`);
  console.log(`${"process".padEnd(10)} ${"pid".padStart(7)} ${"RSS MiB".padStart(7)} ${"PSS MiB".padStart(7)} ${"private".padStart(7)}`);
  for (const r of rows) console.log(`${r.name.padEnd(10)} ${String(r.pid).padStart(7)} ${mib(r.rssKiB)} ${mib(r.pssKiB)} ${mib(r.privateKiB)}`);
  const sum = (k: keyof Mem) => rows.reduce((a, r) => a + (r[k] as number), 0);
  console.log(`${"total".padEnd(10)} ${"".padStart(7)} ${mib(sum("rssKiB"))} ${mib(sum("pssKiB"))} ${mib(sum("privateKiB"))}`);
}

console.log(`node ${process.version}, ${useBundle ? "bundle _out/bundle/basalt.mjs" : "dist/"}, idle ${idleSeconds} s after apply-config and 60 calls${nodeFlags.length ? `, node flags: ${nodeFlags.join(" ")}` : ""}`);
if (modeArg === "separate" || modeArg === "both") print("separate processes (machined + apid)", await measure(false));
if (modeArg === "in-process" || modeArg === "both") print("apid in machined's process (--apid-in-process)", await measure(true));
