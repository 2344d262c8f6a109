import { flushCompileCache } from "node:module";
import { logger, setLogFormat } from "../log.js";
import { describeError } from "../errors.js";
import { KernelClock } from "../sys/clock-kernel.js";
import { detectPlatform, type Platform, readCmdline } from "../machined/platform.js";
import { sysfsBlock } from "../sys/block.js";
import { cgroupfs } from "../sys/cgroups.js";
import { nodePaths } from "../sys/paths.js";
import { kernelParamsAt } from "../sys/kernel-params.js";
import { kernelModulesByModprobe } from "../sys/kernel-modules.js";
import { sysfsSmbios } from "../sys/smbios.js";
import { initPower } from "../sys/power.js";
import { KernelVirtualTerminals } from "../sys/vt.js";
import { parseFlags } from "../flags.js";
import { runMachinedProcess } from "./machined-run.js";
import { DEFAULT_HOST_DNS_LISTEN } from "../controllers/network/host-dns-config.js";
import { networkDefinitions, networking } from "./networking.js";

/** machined on a node: paths rooted at /, platform from the kernel command line, apid on :50000. */
export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, { "apid-listen": "string", "apid-in-process": "boolean" });
  // The bundle is compiled by now: what the baked cache (seedCompileCache) did not hold goes to init's
  // NODE_COMPILE_CACHE (/run) for the agent process machined starts later (apid).
  flushCompileCache();
  const platform = nodePlatform();
  // The node console shows human-readable lines (as Talos prints to the console).
  setLogFormat("console");
  logger("machined").info("starting", { platform: platform.name });
  await runMachinedProcess({
    paths: nodePaths,
    platform,
    power: initPower(),
    cmdline: platform.mode === "container" ? new Map() : readCmdline(),
    block: sysfsBlock(),
    apidListen: (flags["apid-listen"] as string | undefined) ?? "0.0.0.0:50000",
    trustdListen: "0.0.0.0:50001",
    // Unprivileged as on Talos; only root can hand apid its own user.
    ...(process.getuid?.() === 0 ? { apidUser: { uid: 50, gid: 50 } } : {}),
    apidInProcess: flags["apid-in-process"] === true,
    // One multi-call program: re-run this same entry (bundle or dist main.js) as `apid`.
    self: { command: process.execPath, args: [process.argv[1]!] },
    // On a node: DHCP on the first link; an installed node's boot waits (bounded) for an address.
    networking: networking(nodePaths, { node: platform.mode !== "container", waitForAddressMs: 30_000 }),
    extraDefinitions: networkDefinitions,
    kernelParams: kernelParamsAt("/"),
    kernelModules: kernelModulesByModprobe(),
    // In a container the host's firmware is not ours to report (Talos reads none there).
    ...(platform.mode === "container" ? {} : { smbios: sysfsSmbios() }),
    // In a container the cgroups are the container runtime's.
    ...(platform.mode !== "container" ? { cgroups: cgroupfs(), udevd: { udevadm: "/usr/bin/udevadm" } } : {}),
    ...nodeTerminals(platform),
    containerd: { command: "/usr/bin/containerd", cgroupParent: "/system/extensions", oomScoreAdj: -600 },
    cri: { command: "/usr/bin/containerd" },
    ...nodeClock(platform),
    // The host DNS cache (on when the config's machine.features.hostDNS says so).
    ...(platform.mode !== "container" ? { hostDnsListen: DEFAULT_HOST_DNS_LISTEN } : {}),
  });
}

/** The virtual terminals the dashboard draws on (none in a container, as Talos; none when this build has no FFI addon). */
function nodeTerminals(platform: Platform): { terminals?: KernelVirtualTerminals } {
  if (platform.mode === "container") return {};
  try {
    return { terminals: new KernelVirtualTerminals() };
  } catch (err) {
    logger("machined").warn("dashboard disabled: the terminals cannot be switched from this build", {
      error: describeError(err),
    });
    return {};
  }
}

/** The kernel clock time sync adjusts (none in a container, as Talos; none when this build has no kernel-calls addon). */
function nodeClock(platform: Platform): { clock?: KernelClock } {
  if (platform.mode === "container") return {};
  try {
    return { clock: KernelClock.load() };
  } catch (err) {
    logger("machined").warn("time sync disabled: the kernel clock cannot be adjusted from this build", {
      error: describeError(err),
    });
    return {};
  }
}

/**
 * env PLATFORM wins over the kernel command line, so when it is set the cmdline
 * is not read at all (an unreadable /proc/cmdline then does not stop boot).
 */
export function nodePlatform(
  env: NodeJS.ProcessEnv = process.env,
  cmdline: () => Map<string, string[]> = readCmdline,
): Platform {
  return detectPlatform(env["PLATFORM"] === undefined ? cmdline() : new Map(), env);
}
