// Streamed throughput through apid (mutual TLS, loopback) beside the same calls made
// straight to machined's socket, against the sandbox: Read of a 64 MiB file (MiB/s)
// and COSI List of the resource definitions (resources/s), each call read whole.
// Figures only, no thresholds.
//
// usage: node dist/bench/stream-throughput.js [--rounds 5] [--lists 300] [--apid-in-process] [--bundle]
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { NodeClient } from "../agent/src/client/client.js";
import { parseTalosconfig } from "../agent/src/client/talosconfig.js";
import { generateConfigs } from "../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox } from "./sandbox.js";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1] ?? dflt) : dflt;
};
const rounds = Math.max(1, Math.min(50, arg("rounds", 5)));
const lists = Math.max(1, Math.min(5000, arg("lists", 300)));
const inProcess = process.argv.includes("--apid-in-process");
const fileMiB = 64;

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-streams-"));
const file = path.join(stateDir, "blob.bin");
writeFileSync(file, randomBytes(fileMiB * 1024 * 1024));
const port = await freePort();
const generated = await generateConfigs({ clusterName: "bench", endpoint: "https://127.0.0.1:6443", installDisk: "" });
const sandbox = startSandbox(stateDir, port, inProcess);
const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
const apid = new NodeClient({
  endpoint: `127.0.0.1:${port}`,
  credentials: { kind: "mtls", ...parseTalosconfig(generated.talosconfig) },
});
const socket = new NodeClient({
  endpoint: `unix:${path.join(stateDir, "system", "run", "machined", "machine.sock")}`,
  credentials: { kind: "socket", roles: ["os:admin"] },
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function readMiBs(c: NodeClient): Promise<number> {
  const t0 = performance.now();
  const bytes = (await c.read(file)).length;
  if (bytes !== fileMiB * 1024 * 1024) throw new Error(`read ${bytes} bytes of ${fileMiB} MiB`);
  return fileMiB / ((performance.now() - t0) / 1000);
}

async function listRate(c: NodeClient): Promise<number> {
  let resources = 0;
  const t0 = performance.now();
  for (let i = 0; i < lists; i++)
    resources += (await c.resourceList("meta", "ResourceDefinitions.meta.cosi.dev")).length;
  return resources / ((performance.now() - t0) / 1000);
}

try {
  await eventually(() => insecure.disks());
  await insecure.applyConfiguration(generated.controlplane);
  await eventually(() => apid.version());
  const rows: [string, string, number[], number[]][] = [
    [`Read ${fileMiB} MiB`, "MiB/s", [], []],
    [`COSI List ResourceDefinitions x${lists}`, "resources/s", [], []],
  ];
  for (let r = 0; r < rounds; r++) {
    // Alternately, so both paths see the same host load.
    rows[0]![2].push(await readMiBs(socket));
    rows[0]![3].push(await readMiBs(apid));
    rows[1]![2].push(await listRate(socket));
    rows[1]![3].push(await listRate(apid));
  }
  console.log(
    `node ${process.version}, apid ${inProcess ? "in machined's process" : "separate process"}, ${rounds} rounds, medians (min-max)`,
  );
  const f = (xs: number[]) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;
  console.log(["call", "unit", "machined socket", "through apid (mTLS)", "ratio"].join("\t"));
  for (const [name, unit, direct, viaApid] of rows)
    console.log([name, unit, f(direct), f(viaApid), (median(viaApid) / median(direct)).toFixed(2)].join("\t"));
} finally {
  for (const c of [insecure, apid, socket]) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
