// The agent's memory at idle on this machine: starts the sandbox (machined + apid
// as separate processes, then with apid in machined's process), applies a
// generated config, makes a few calls, waits for idle and prints RSS and PSS
// (from /proc/<pid>/smaps_rollup) of every agent process and their total.
// Figures only, no thresholds.
//
// usage: node dist/bench/memory.js [--mode separate|in-process|both|node] [--bundle] [--idle-seconds 15]
//   --mode node: an installed node in QEMU instead (the amd64 ISO, apply-config, install, kexec): once
//     containerd and udevd are Running and healthy and it has idled, every agent process and the system
//     services beside it (containerd, udevd, syslogd's relay), read over mutual TLS from the node's /proc.
//   --bundle: run the esbuild bundle (_out/bundle/basalt.mjs or $BENCH_BUNDLE, as in the image;
//     made by scripts/bundle.mjs when missing) instead of dist/.
//   machined runs with the agent's node flags and environment (agentNodeFlags, agentEnv in
//   agent/src/cmd/machined-run.ts), as init starts it; to try levers:
//   BENCH_NODE_FLAGS="--flag ..." replaces machined's node flags, BASALT_APID_NODE_FLAGS apid's,
//   MALLOC_ARENA_MAX=<n> in the environment replaces the arena cap of both.
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { NodeClient, type ClientCredentials } from "../agent/src/client/client.js";
import { parseTalosconfig } from "../agent/src/client/talosconfig.js";
import { generateConfigs } from "../agent/src/config/generate/index.js";
import { ApplyMode } from "../agent/src/api/enums.js";
import { expectServicesHealthy, namesUnder } from "../test/e2e/node-checks.js";
import { bootNode, waitFor } from "../test/e2e/qemu.js";
import { entry, eventually, freePort, nodeFlags, sandboxEnv, sleep, startSandbox, useBundle } from "./sandbox.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const modeArg = arg("mode", "both");
const idleSeconds = Number(arg("idle-seconds", "15"));
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

function memoryFrom(pid: number, name: string, rollup: string): Mem {
  const field = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(rollup)?.[1] ?? NaN);
  return {
    pid,
    name,
    rssKiB: field("Rss"),
    pssKiB: field("Pss"),
    privateKiB: field("Private_Clean") + field("Private_Dirty"),
  };
}

function memoryOf(pid: number): Mem {
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  const name = argv.includes("apid")
    ? "apid"
    : argv.some((a) => a.endsWith("sandbox.js") || a === "sandbox")
      ? "machined"
      : path.basename(argv[0] ?? "?");
  return memoryFrom(pid, name, readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
}

/** What a node process is, from its command line; undefined for processes that are neither the agent's nor its services'. */
function nodeProcessName(argv: string[]): string | undefined {
  for (const agent of ["machined", "apid"]) if (argv.includes(agent)) return agent;
  const program = path.basename(argv[0] ?? "");
  if (program === "containerd" || program === "systemd-udevd") return program;
  if (program === "syslog-relay") return "syslogd";
  return undefined;
}

/** An installed amd64 node in QEMU, idle with containerd and udevd running: its processes' memory, read over the API. */
async function measureNode(): Promise<{ rows: Mem[]; uniqueKiB: undefined }> {
  const generated = await generateConfigs({
    clusterName: "bench",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const creds = parseTalosconfig(generated.talosconfig);
  const node = await bootNode({ name: "bench-memory-node", boot: "iso", disk: "bench-memory-node" });
  try {
    await waitFor(node, "maintenance API", () => node.client().disks(), 600_000);
    await node.client().applyConfiguration(generated.controlplane, { mode: ApplyMode.REBOOT });
    const c = node.mtlsClient(creds);
    await waitFor(node, "mTLS Version after install", () => c.version(), 900_000);
    await expectServicesHealthy(node, c, ["apid", "containerd", "machined", "syslogd", "trustd", "udevd"], 600_000);
    await sleep(idleSeconds * 1000);
    const rows: Mem[] = [];
    for (const p of (await namesUnder(c, "/proc")).filter((n) => /^\d+$/.test(n))) {
      const argv = (await c.read(`/proc/${p}/cmdline`).catch(() => Buffer.alloc(0))).toString().split("\0");
      const name = nodeProcessName(argv);
      if (name) rows.push(memoryFrom(Number(p), name, (await c.read(`/proc/${p}/smaps_rollup`)).toString()));
    }
    c.close();
    return { rows, uniqueKiB: undefined };
  } finally {
    await node.stop({ removeDisk: true });
  }
}

/**
 * Physical pages mapped by any of the processes, each counted once (from
 * /proc/<pid>/pagemap, needs root): what the agent holds in RAM. RSS counts
 * pages shared between our processes (the node binary) once per process, PSS
 * splits them with every other process on the host that maps the same file.
 */
function uniquePagesKiB(pids: number[]): number | undefined {
  const frames = new Set<bigint>();
  for (const pid of pids) {
    let fd: number;
    try {
      fd = openSync(`/proc/${pid}/pagemap`, "r");
    } catch {
      return undefined;
    }
    try {
      const smaps = readFileSync(`/proc/${pid}/smaps`, "utf8");
      let range: [bigint, bigint] | undefined;
      for (const line of smaps.split("\n")) {
        const m = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
        if (m) {
          range = [BigInt(`0x${m[1]}`), BigInt(`0x${m[2]}`)];
          continue;
        }
        const rss = /^Rss:\s+(\d+) kB/.exec(line);
        if (!rss || !range || rss[1] === "0") continue;
        const first = range[0] / 4096n;
        const count = Number((range[1] - range[0]) / 4096n);
        const buf = Buffer.alloc(count * 8);
        readSync(fd, buf, 0, buf.length, Number(first * 8n));
        for (let i = 0; i < count; i++) {
          const entry = buf.readBigUInt64LE(i * 8);
          if (!(entry >> 63n)) continue; // not present
          const pfn = entry & ((1n << 55n) - 1n);
          if (pfn === 0n) return undefined; // no CAP_SYS_ADMIN: frame numbers hidden
          frames.add(pfn);
        }
      }
    } finally {
      closeSync(fd);
    }
  }
  return frames.size * 4;
}

const mib = (kib: number) => (kib / 1024).toFixed(1).padStart(7);

async function measure(inProcess: boolean): Promise<{ rows: Mem[]; uniqueKiB: number | undefined }> {
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
  const sandbox = startSandbox(stateDir, port, inProcess);
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
    const pids = processTree(sandbox.child.pid!);
    return { rows: pids.map(memoryOf), uniqueKiB: uniquePagesKiB(pids) };
  } finally {
    for (const c of clients) c.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

function print(title: string, { rows, uniqueKiB }: { rows: Mem[]; uniqueKiB: number | undefined }): void {
  console.log(`== ${title}`);
  console.log(
    `${"process".padEnd(10)} ${"pid".padStart(7)} ${"RSS MiB".padStart(7)} ${"PSS MiB".padStart(7)} ${"private".padStart(7)}`,
  );
  for (const r of rows)
    console.log(
      `${r.name.padEnd(10)} ${String(r.pid).padStart(7)} ${mib(r.rssKiB)} ${mib(r.pssKiB)} ${mib(r.privateKiB)}`,
    );
  const sum = (k: keyof Mem) => rows.reduce((a, r) => a + (r[k] as number), 0);
  console.log(
    `${"total".padEnd(10)} ${"".padStart(7)} ${mib(sum("rssKiB"))} ${mib(sum("pssKiB"))} ${mib(sum("privateKiB"))}`,
  );
  if (uniqueKiB === undefined && rows.some((r) => !["machined", "apid"].includes(r.name))) {
    const agent = rows.filter((r) => ["machined", "apid"].includes(r.name));
    const agentSum = (k: keyof Mem) => agent.reduce((a, r) => a + (r[k] as number), 0);
    console.log(
      `${"agent".padEnd(10)} ${"".padStart(7)} ${mib(agentSum("rssKiB"))} ${mib(agentSum("pssKiB"))} ${mib(agentSum("privateKiB"))}   (machined with trustd in it, apid)`,
    );
    return;
  }
  console.log(
    `distinct pages of all agent processes (shared counted once): ${uniqueKiB === undefined ? "n/a (needs root)" : `${mib(uniqueKiB).trim()} MiB`}`,
  );
}

if (modeArg === "node") {
  console.log(
    `installed amd64 node in QEMU (_out/metal-amd64.iso), idle ${idleSeconds} s once containerd and udevd are Running and healthy`,
  );
  print("installed node: the agent, containerd, udevd, syslogd", await measureNode());
  process.exit(0);
}
console.log(
  `node ${process.version}, ${useBundle ? `bundle ${entry()[0]}` : "dist/"}, idle ${idleSeconds} s after apply-config and 60 calls, machined node flags: [${nodeFlags.join(" ")}], MALLOC_ARENA_MAX=${sandboxEnv["MALLOC_ARENA_MAX"]}${process.env["BASALT_APID_NODE_FLAGS"] !== undefined ? `, apid node flags: [${process.env["BASALT_APID_NODE_FLAGS"]}]` : ""}`,
);
if (modeArg === "separate" || modeArg === "both") print("separate processes (machined + apid)", await measure(false));
if (modeArg === "in-process" || modeArg === "both")
  print("apid in machined's process (--apid-in-process)", await measure(true));
