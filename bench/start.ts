// machined's start on the host, QEMU-free: the sandbox from one or more bundles, started in turn as init starts
// machined (its node flags and environment, an empty compile cache, as on a boot), timed from spawn to the maintenance
// listener accepting a TCP connection: wall time and the process's CPU time (user + system) at that moment.
// Prints figures only.
//
// usage: node dist/bench/start.js [--bundles _out/before/bundle/basalt.mjs,_out/bundle/basalt.mjs] [--rounds 6]
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, nodeFlags, sandboxEnv, sleep } from "./sandbox.js";
import { startSandbox } from "../test/integration/helpers/sandbox.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const bundles = arg("bundles", "_out/bundle/basalt.mjs")
  .split(",")
  .map((b) => path.resolve(b));
const rounds = Number(arg("rounds", "6"));
// /proc/<pid>/stat counts CPU in clock ticks: 100 a second on Linux.
const TICKS_PER_SECOND = 100;

function cpuSeconds(pid: number): number {
  // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = net.connect(port, "127.0.0.1");
    conn.once("connect", () => {
      conn.destroy();
      resolve(true);
    });
    conn.once("error", () => resolve(false));
  });
}

async function once(bundle: string): Promise<{ wall: number; cpu: number }> {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-start-"));
  const port = await freePort();
  const started = performance.now();
  const sandbox = startSandbox(stateDir, port, [], {
    nodeArgs: [...nodeFlags, bundle, "sandbox"],
    // An empty compile cache of its own, as init gives machined on every boot (/run).
    env: { ...sandboxEnv, NODE_COMPILE_CACHE: path.join(stateDir, "compile-cache") },
  });
  try {
    for (;;) {
      if (sandbox.child.exitCode !== null)
        throw new Error(`the sandbox exited (${sandbox.child.exitCode}):\n${sandbox.output().slice(-2000)}`);
      if (await accepts(port)) break;
      await sleep(5);
    }
    const wall = (performance.now() - started) / 1000;
    return { wall, cpu: cpuSeconds(sandbox.child.pid!) };
  } finally {
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const results = new Map<string, { wall: number; cpu: number }[]>(bundles.map((b) => [b, []]));
for (let round = 1; round <= rounds; round++) {
  for (const bundle of bundles) {
    const r = await once(bundle);
    results.get(bundle)!.push(r);
    process.stdout.write(
      `round ${round}: ${path.relative(process.cwd(), bundle)}: wall ${r.wall.toFixed(3)} s, CPU ${r.cpu.toFixed(2)} s\n`,
    );
  }
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
for (const [bundle, rs] of results) {
  process.stdout.write(
    `${path.relative(process.cwd(), bundle)}: spawn -> maintenance listener, median of ${rs.length}: wall ${median(rs.map((r) => r.wall)).toFixed(3)} s, CPU ${median(rs.map((r) => r.cpu)).toFixed(2)} s\n`,
  );
}
