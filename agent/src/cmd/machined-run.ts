import path from "node:path";
import { logger } from "../log.js";
import { startMachined, type MachinedOptions } from "../machined/machined.js";
import { systemMounter } from "../sys/mount.js";
import type { Power, PowerAction } from "../sys/power.js";
import type { Platform } from "../machined/platform.js";
import type { ResourceDefinitionInput } from "../resources/definitions.js";
import type { BlockSysfs } from "../sys/block.js";
import type { Cgroups } from "../sys/cgroups.js";
import type { Paths } from "../sys/paths.js";
import { isProxyVariable } from "../config/environment.js";
import { configChecker, cosiFactory } from "./wiring.js";

export interface RunOptions {
  paths: Paths;
  platform: Platform;
  block: BlockSysfs;
  apidListen: string;
  /** Where trustd (in machined's process) listens on a control-plane node. */
  trustdListen: string;
  /** Run apid as this user (a node: Talos's uid/gid 50); unset, it runs as we do (the sandbox). */
  apidUser?: { uid: number; gid: number };
  /** Run apid inside machined's process instead of as a child process. */
  apidInProcess?: boolean;
  /** The command line that starts this program (node + entry script + any leading args). */
  self: { command: string; args: string[] };
  networking?: MachinedOptions["networking"];
  /** Run the system containerd and the extension services. */
  containerd?: MachinedOptions["containerd"];
  /** Run the CRI containerd (with the system containerd) once the config has a cluster. */
  cri?: MachinedOptions["cri"];
  clock?: MachinedOptions["clock"];
  hostDnsListen?: string;
  extraDefinitions?: readonly ResourceDefinitionInput<never>[];
  /** A node's power (init's FIFO); absent in the sandbox, where a reboot starts machined again in this process. */
  power?: Power;
  cmdline?: Map<string, string[]>;
  kernelParams: MachinedOptions["kernelParams"];
  kernelModules: MachinedOptions["kernelModules"];
  smbios?: MachinedOptions["smbios"];
  /** Talos's cgroups (a node); unset in the sandbox. */
  cgroups?: Cgroups;
  /** Print the services' logs on stderr too (the sandbox). */
  echoServiceLogs?: boolean;
  /** Run udevd (a node). */
  udevd?: { udevadm: string };
  /** The dashboard's terminals (a node). */
  terminals?: MachinedOptions["terminals"];
}

/**
 * Runs machined until SIGTERM/SIGINT, with apid as its supervised child. Without a
 * node's power (the sandbox), a reboot ends this machined and starts the next boot
 * in the same process; a power-off ends the process.
 */
export async function runMachinedProcess(opts: RunOptions): Promise<void> {
  const stopped = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) process.once(sig, () => stopped.abort());
  for (let boot = 1; !stopped.signal.aborted; boot++) {
    const ac = new AbortController();
    stopped.signal.addEventListener("abort", () => ac.abort(), { once: true });
    let next: PowerAction | undefined;
    const sandboxPower: Power = {
      request: async (action) => {
        next = action;
        ac.abort();
      },
      loadKexec: async () => undefined,
      kexec: async () => {
        next = "reboot";
        ac.abort();
      },
    };
    const m = await startMachined({
      paths: opts.paths,
      platform: opts.platform,
      block: opts.block,
      mounter: systemMounter(),
      power: opts.power ?? sandboxPower,
      cmdline: opts.cmdline ?? new Map(),
      configChecker: configChecker(opts.platform, opts.block),
      cosi: cosiFactory(),
      apid: {
        listen: opts.apidListen,
        inProcess: opts.apidInProcess ?? false,
        spec: (flags, environment) => ({
          id: "apid",
          command: opts.self.command,
          args: [
            ...apidFlags().args,
            ...opts.self.args,
            "apid",
            "--listen",
            opts.apidListen,
            "--machined-socket",
            opts.paths.machinedSocket,
            "--apid-socket",
            opts.paths.apidSocket,
            ...flags,
          ],
          env: { ...withoutProxyVariables(apidEnv(environment)), ...apidFlags().env },
          stopTimeoutMs: 5000,
          ipc: true,
          ...(opts.apidUser ? { user: opts.apidUser } : {}),
        }),
        ...(opts.apidUser ? { user: opts.apidUser } : {}),
      },
      trustd: { listen: opts.trustdListen },
      ...(opts.networking ? { networking: opts.networking } : {}),
      ...(opts.containerd ? { containerd: opts.containerd } : {}),
      ...(opts.cri ? { cri: opts.cri } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.hostDnsListen ? { hostDnsListen: opts.hostDnsListen } : {}),
      ...(opts.extraDefinitions ? { extraDefinitions: opts.extraDefinitions } : {}),
      kernelModules: opts.kernelModules,
      kernelParams: opts.kernelParams,
      ...(opts.smbios ? { smbios: opts.smbios } : {}),
      ...(opts.cgroups ? { cgroups: opts.cgroups } : {}),
      echoServiceLogs: opts.echoServiceLogs === true,
      ...(opts.udevd ? { udevd: opts.udevd } : {}),
      ...(opts.terminals ? { terminals: opts.terminals } : {}),
      // Built beside the entry script (scripts/build-native.sh).
      syslogRelay: path.join(path.dirname(opts.self.args.at(-1) ?? "."), "syslog-relay"),
      signal: ac.signal,
    });
    await m.done;
    if (next !== "reboot") break;
    logger("machined").info("rebooting: starting the next boot in this process", { boot: boot + 1 });
  }
}

/**
 * V8 flags for the agent's Node processes. `--optimize-for-size` (smaller young
 * generation, earlier bytecode flushing, leaner heap growth) took machined + apid
 * at idle from 141 to 110-117 MiB of distinct pages (RSS sum 194 -> 163-170 MiB) with
 * RPC latency within the noise of bench/rpc-latency; `--lite-mode` saved ~18 MiB more
 * but made COSI List and fan-out calls markedly slower (interpreter only), so it is not used.
 * machined gets them from whoever starts it (init on a node).
 */
export const agentNodeFlags: readonly string[] = ["--optimize-for-size"];

/**
 * glibc gives every thread that allocates its own malloc arena (up to 8 per core),
 * each keeping freed memory: capping them at 2 took a further ~11 MiB off machined
 * + apid at idle (bench/memory). An arena cap already in the environment is kept.
 * machined gets it from whoever starts it (init on a node).
 */
export const agentEnv: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/** machined's environment for apid, with Talos's (talos.environment=, .machine.env: "KEY=VALUE") over it. */
function apidEnv(environment: readonly string[]): NodeJS.ProcessEnv {
  const user = Object.fromEntries(
    environment.filter((e) => e.indexOf("=") > 0).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
  );
  return { ...agentEnv, ...process.env, ...user };
}

/** apid's environment has no proxy variables (.machine.env may set them), as Talos starts it. */
function withoutProxyVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !isProxyVariable(key)));
}

/**
 * How apid gets its Node and V8 flags. By default none on node's command line and the agent's V8 flags in
 * BASALT_V8_FLAGS, which apid sets once its modules are loaded (cmd/main.ts), as init does for machined: on the
 * command line they make Node refuse its built-in code cache and the compile cache machined wrote, and apid's
 * start to its first call costs more CPU. BASALT_APID_NODE_FLAGS (space-separated) puts exactly its
 * flags on the command line instead, for measuring levers (bench/memory).
 */
export function apidFlags(env: NodeJS.ProcessEnv = process.env): { args: string[]; env: NodeJS.ProcessEnv } {
  const given = env["BASALT_APID_NODE_FLAGS"];
  if (given !== undefined) return { args: given.split(/\s+/).filter(Boolean), env: {} };
  return { args: [], env: { BASALT_V8_FLAGS: agentNodeFlags.join(" ") } };
}

/** The entry script of the multi-call program, beside this module (dist) or the bundle itself. */
export function entryScript(moduleDir: string): string {
  return path.join(moduleDir, "main.js");
}
