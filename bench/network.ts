// Networking start-up figures: the sandbox's machined (dist/, the agent's node flags,
// apid in process) started inside a network namespace of its own with
// `--network-apply --kernel-cmdline ip=eth0:dhcp`, as a node applies its network,
// while dnsmasq serves DHCPv4 across a veth pair. Measured per run:
//   - machined start (the spawn) -> the leased address in the kernel (seen by
//     `ip monitor address` in that namespace, started before machined);
//   - the agent process's own start (performance.timeOrigin) -> that address;
//   - processes the agent started through node:child_process until 5 s after the
//     address, split into those started from networking code and the rest
//     (bench/spawn-count.ts, preloaded with --import). The aim is zero from networking.
// Figures only, no thresholds. Needs root, `ip` and dnsmasq.
//
// usage: node dist/bench/network.js [--runs 3]
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { canRunNetns, ip } from "../test/integration/helpers/netns.js";
import { stopProcess } from "../test/integration/helpers/sandbox.js";
import { nodeFlags, sandboxEnv } from "./sandbox.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const sandboxJs = path.resolve(here, "../agent/src/cmd/sandbox.js");
const preload = path.resolve(here, "spawn-count.js");

const i = process.argv.indexOf("--runs");
const runs = Math.max(1, Math.min(20, Number(i > 0 ? process.argv[i + 1] : "3")));

const why = canRunNetns() ?? (hasDnsmasq() ? undefined : "dnsmasq is not installed");
if (why) {
  console.log(`network: skipped (${why})`);
  process.exit(0);
}

function hasDnsmasq(): boolean {
  try {
    execFileSync("dnsmasq", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

interface Spawned {
  fn: string;
  command: string;
  networking: boolean;
}

interface Run {
  spawnToAddressMs: number;
  processStartToAddressMs: number;
  spawned: Spawned[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The first line of `child`'s stdout that matches, with the time it arrived. */
function firstLine(child: ChildProcess, re: RegExp, ms: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`no line matching ${re} within ${ms} ms`)), ms);
    child.stdout!.on("data", (b: Buffer) => {
      const at = Date.now();
      buf += b.toString();
      if (re.test(buf)) {
        clearTimeout(timer);
        resolve(at);
      }
    });
  });
}

async function oneRun(n: number): Promise<Run> {
  const tag = `${process.pid % 10000}${n}`;
  const ns = { server: `bnb-s-${tag}`, client: `bnb-c-${tag}` };
  const subnet = "10.215.61";
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-net-"));
  const children: ChildProcess[] = [];
  try {
    ip("netns", "add", ns.server);
    ip("netns", "add", ns.client);
    ip("-n", ns.server, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", ns.client);
    ip("-n", ns.server, "addr", "add", `${subnet}.1/24`, "dev", "eth0");
    ip("-n", ns.server, "link", "set", "eth0", "up");
    const dnsmasq = spawn(
      "ip",
      [
        "netns",
        "exec",
        ns.server,
        "dnsmasq",
        "--no-daemon",
        "--conf-file=/dev/null",
        "--port=0",
        "--no-ping",
        "--bind-interfaces",
        "--interface=eth0",
        `--dhcp-range=${subnet}.50,${subnet}.60,255.255.255.0,1h`,
        `--dhcp-leasefile=${path.join(dir, "leases")}`,
      ],
      { stdio: "ignore" },
    );
    children.push(dnsmasq);
    const monitor = spawn("ip", ["-n", ns.client, "monitor", "address"], { stdio: ["ignore", "pipe", "ignore"] });
    children.push(monitor);
    const addressSeen = firstLine(monitor, new RegExp(`inet ${subnet.replaceAll(".", "\\.")}\\.`), 60_000);
    await sleep(300); // dnsmasq and the monitor listening

    const spawnLog = path.join(dir, "spawns.jsonl");
    const startedAt = Date.now();
    const machined = spawn(
      "ip",
      [
        "netns",
        "exec",
        ns.client,
        process.execPath,
        ...nodeFlags,
        "--import",
        preload,
        sandboxJs,
        "--state-dir",
        path.join(dir, "state"),
        "--apid-listen",
        "127.0.0.1:50000",
        "--apid-in-process",
        "--network-apply",
        "--kernel-cmdline",
        "ip=eth0:dhcp",
      ],
      {
        stdio: "ignore",
        env: { ...sandboxEnv, BASALT_BENCH_SPAWN_LOG: spawnLog },
      },
    );
    children.push(machined);
    const addressAt = await addressSeen;
    await sleep(5000);
    await stopProcess(machined);
    const lines = readFileSync(spawnLog, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Spawned & { processStart?: number });
    const processStart = lines.find((l) => l.processStart !== undefined)!.processStart!;
    return {
      spawnToAddressMs: addressAt - startedAt,
      processStartToAddressMs: Math.round(addressAt - processStart),
      spawned: lines.filter((l) => l.processStart === undefined),
    };
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) await stopProcess(c, 2000);
    for (const n of Object.values(ns)) {
      try {
        ip("netns", "del", n);
      } catch {
        // not created
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Run[] = [];
for (let n = 0; n < runs; n++) results.push(await oneRun(n));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (xs: number[]) => `${median(xs)} ms (runs: ${xs.join(", ")})`;
const networking = results.map((r) => r.spawned.filter((s) => s.networking).length);
const others = results.map((r) => r.spawned.filter((s) => !s.networking).length);
const rows: [string, string][] = [
  ["runs", String(runs)],
  ["machined start -> first address (DHCPv4, in the kernel)", ms(results.map((r) => r.spawnToAddressMs))],
  ["agent process start -> first address", ms(results.map((r) => r.processStartToAddressMs))],
  ["processes spawned by networking code (until address + 5 s)", networking.join(", ")],
  ["processes spawned by the rest of the agent", others.join(", ")],
];
const width = Math.max(...rows.map(([k]) => k.length));
for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
const commands = [
  ...new Set(
    results.flatMap((r) => r.spawned.map((s) => `${s.networking ? "networking" : "other"}: ${s.fn} ${s.command}`)),
  ),
];
for (const c of commands) console.log(`  ${c}`);
