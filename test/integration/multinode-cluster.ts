// A small cluster of sandboxes for multinode tests and the fan-out bench: each
// member in its own network namespace on one bridge, started from the configs one
// `gen config` wrote (its hostname set), with apid on <its ip>:50000 and trustd on :50001.
// Needs root and iproute2's `ip netns`.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs, type GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { canRunNetns, ip } from "./helpers/netns.js";
import { stopProcess } from "./helpers/sandbox.js";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");

export interface MemberSpec {
  name: string;
  hostname: string;
  kind: "controlplane" | "worker";
}

export interface Member extends MemberSpec {
  address: string;
  ns: string;
  /** The member's state directory (machined's socket is under it). */
  stateDir: string;
  /** Everything the member's sandbox printed. */
  out: string;
  child?: ChildProcess;
}

export interface Cluster {
  members: Member[];
  generated: GeneratedConfigs;
  /** The generated talosconfig's admin credentials. */
  admin: { ca: string; crt: string; key: string };
  stop(m: Member): Promise<void>;
  /** The last lines each member printed (for failure messages). */
  logTails(lines?: number): string;
  close(): Promise<void>;
}

/** Why a cluster cannot be started here, or undefined when it can. */
export const clusterUnsupported = canRunNetns;

/** The generated config of the member's kind with its hostname set (`gen config` writes machine.network as `{}`). */
function configFor(generated: GeneratedConfigs, m: MemberSpec): string {
  const base = m.kind === "controlplane" ? generated.controlplane : generated.worker;
  const patched = base.replace(/^ {4}network: \{\}$/m, `    network:\n        hostname: ${m.hostname}`);
  if (patched === base) throw new Error("machine.network not found in the generated config");
  return patched;
}

/** Starts the members on `<subnet>.1, .2, ...`; the first must be a control-plane node (the cluster endpoint). */
export async function startCluster(subnet: string, specs: MemberSpec[]): Promise<Cluster> {
  const tag = randomBytes(3).toString("hex");
  const bridge = `bmb${tag}`;
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-cluster-"));
  // Services running unprivileged must reach their sockets below here.
  chmodSync(root, 0o755);
  const members: Member[] = specs.map((s, i) => ({
    ...s,
    address: `${subnet}.${i + 1}`,
    ns: `bm-${i + 1}-${tag}`,
    stateDir: path.join(root, s.name),
    out: "",
  }));
  const generated = await generateConfigs({
    clusterName: "multinode",
    endpoint: `https://${members[0]!.address}:6443`,
    installDisk: "",
  });
  const ctx = parseTalosconfig(generated.talosconfig);

  ip("link", "add", bridge, "type", "bridge");
  ip("addr", "add", `${subnet}.254/24`, "dev", bridge);
  ip("link", "set", bridge, "up");
  members.forEach((m, i) => {
    ip("netns", "add", m.ns);
    ip("-n", m.ns, "link", "set", "lo", "up");
    ip("link", "add", `bmv${tag}${i}`, "type", "veth", "peer", "name", "eth0", "netns", m.ns);
    ip("link", "set", `bmv${tag}${i}`, "master", bridge, "up");
    ip("-n", m.ns, "addr", "add", `${m.address}/24`, "dev", "eth0");
    ip("-n", m.ns, "link", "set", "eth0", "up");
  });

  for (const m of members) {
    const stateDir = m.stateDir;
    mkdirSync(path.join(stateDir, "system", "state"), { recursive: true });
    // As if applied before: the node boots straight into its configuration.
    writeFileSync(path.join(stateDir, "system", "state", "config.yaml"), configFor(generated, m));
    const args = [
      "netns",
      "exec",
      m.ns,
      process.execPath,
      sandboxJs,
      "--state-dir",
      stateDir,
      "--apid-listen",
      `${m.address}:50000`,
      "--trustd-listen",
      `${m.address}:50001`,
    ];
    const child = spawn("ip", args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, BASALT_LOG_LEVEL: "info" },
    });
    child.stdout!.on("data", (b: Buffer) => (m.out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (m.out += b.toString()));
    process.once("exit", () => child.kill("SIGKILL"));
    m.child = child;
  }

  const stop = async (m: Member): Promise<void> => (m.child ? stopProcess(m.child) : undefined);

  return {
    members,
    generated,
    admin: { ca: ctx.ca, crt: ctx.crt, key: ctx.key },
    stop,
    logTails: (lines = 25) =>
      members.map((m) => `--- ${m.name}:\n${m.out.split("\n").slice(-lines).join("\n")}`).join("\n"),
    async close() {
      await Promise.all(members.map(stop));
      for (const m of members) execFileSync("ip", ["netns", "del", m.ns], { stdio: "ignore" });
      execFileSync("ip", ["link", "del", bridge], { stdio: "ignore" });
      rmSync(root, { recursive: true, force: true });
    },
  };
}
