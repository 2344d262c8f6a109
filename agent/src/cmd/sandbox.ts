import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeError, InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import { sandboxPlatform, sandboxPlatformOf } from "../machined/platform.js";
import { sysfsBlock } from "../sys/block.js";
import { pathsAt } from "../sys/paths.js";
import { kernelParamsOverlay } from "../sys/kernel-params.js";
import { kernelModulesRecorded } from "../sys/kernel-modules.js";
import { FakeClock } from "../sys/clock-fake.js";
import { durationMs } from "../config/checks.js";
import { parseFlags } from "../flags.js";
import { splitHostPort } from "../sys/host-port.js";
import { entryScript, runMachinedProcess } from "./machined-run.js";
import { networkDefinitions, networking } from "./networking.js";

const log = logger("sandbox");

/**
 * The sandbox platform: machined and apid on a developer machine, all state
 * under a scratch directory, platform "container" (no install, as Talos in a container).
 */
export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, {
    "state-dir": "string",
    "apid-listen": "string",
    "trustd-listen": "string",
    "apid-in-process": "boolean",
    "network-apply": "boolean",
    "kernel-cmdline": "string",
    containerd: "string",
    cri: "string",
    "fake-clock-offset": "string",
    "host-dns-listen": "string",
    platform: "string",
  });
  const stateDir = path.resolve((flags["state-dir"] as string | undefined) ?? path.join("_out", "sandbox"));
  const apidListen = (flags["apid-listen"] as string | undefined) ?? "127.0.0.1:50000";
  const trustdListen = (flags["trustd-listen"] as string | undefined) ?? "127.0.0.1:50001";
  mkdirSync(stateDir, { recursive: true });
  const paths = pathsAt(stateDir);
  const endpoint = apidListen.replace(/^0\.0\.0\.0:/, "127.0.0.1:");
  log.info("sandbox starting", { stateDir, apidListen, trustdListen });
  process.stderr.write(
    [
      `Basalt sandbox: machined + apid (+ trustd on ${trustdListen} with a control-plane config), state in ${stateDir}`,
      `  maintenance mode (no config yet), no credentials:`,
      `    talosctl -n ${endpoint} disks --insecure`,
      `    talosctl -n ${endpoint} apply-config --insecure -f controlplane.yaml`,
      `  then over mutual TLS with the talosconfig written by gen config:`,
      `    talosctl --talosconfig ./talosconfig -e ${endpoint} -n ${splitHostPort(endpoint).host} version`,
      `  or with our client: node dist/agent/src/cmd/main.js ctl ... (see agent/src/client/cli.ts)`,
      "",
    ].join("\n"),
  );
  // apid is this same program re-run as `apid`: through main.js/the bundle when we were started
  // that way, else main.js beside this module (`node dist/agent/src/cmd/sandbox.js`).
  const here = path.dirname(fileURLToPath(import.meta.url));
  const direct = runDirectly();
  const entry = direct || !process.argv[1] ? entryScript(here) : path.resolve(process.argv[1]);
  await runMachinedProcess({
    paths,
    // `--platform aws`: the configuration and PlatformMetadata come from that cloud's metadata service.
    platform: typeof flags.platform === "string" ? sandboxPlatformOf(flags.platform) : sandboxPlatform,
    block: sysfsBlock(),
    apidListen,
    trustdListen,
    apidInProcess: flags["apid-in-process"] === true,
    self: { command: process.execPath, args: [entry] },
    // `--containerd /usr/bin/containerd`: run it (and extension services), its paths under the state directory.
    ...(typeof flags.containerd === "string"
      ? { containerd: { command: flags.containerd, cgroupParent: `/basalt-sandbox-${process.pid}/extensions` } }
      : {}),
    // `--cri /usr/bin/containerd` (with --containerd): the CRI containerd once the config has a cluster, its paths under the state directory.
    ...(typeof flags.cri === "string" ? { cri: { command: flags.cri } } : {}),
    // Observe the host's links and addresses (no DHCP, no resolv.conf), as Talos in a container;
    // `--network-apply` (inside a network namespace of its own) applies the network config as a node does.
    networking: networking(paths, {
      node: false,
      applyInSandbox: flags["network-apply"] === true,
      cmdline: (flags["kernel-cmdline"] as string | undefined) ?? "",
    }),
    // Time sync is off in the sandbox (Talos in a container), unless asked to follow the servers with a clock
    // of its own that starts this far from the host's (the host clock is never touched).
    ...(typeof flags["fake-clock-offset"] === "string"
      ? { clock: new FakeClock(parseOffset(flags["fake-clock-offset"])) }
      : {}),
    // The host DNS cache only where asked (127.0.0.53:53 is the host's, and several sandboxes may run at once).
    ...(typeof flags["host-dns-listen"] === "string" ? { hostDnsListen: flags["host-dns-listen"] } : {}),
    extraDefinitions: networkDefinitions,
    // Kernel parameters are written under the state directory, never to the host's kernel.
    kernelParams: kernelParamsOverlay(path.join(stateDir, "kernel-params")),
    // Kernel modules are recorded under the state directory, never loaded into the host.
    kernelModules: kernelModulesRecorded(path.join(stateDir, "kernel-modules")),
    // A developer watches one terminal: the services' logs (also in `logs <id>`) join machined's there.
    echoServiceLogs: true,
  });
}

function parseOffset(value: string): number {
  const ms = durationMs(value);
  if (ms === undefined)
    throw new InvalidInputError(`--fake-clock-offset wants a duration such as -5s or 1h, got ${JSON.stringify(value)}`);
  return ms;
}

/** Started as `node dist/agent/src/cmd/sandbox.js` (npm start), not through main.js or a bundle holding this module. */
function runDirectly(): boolean {
  const script = process.argv[1];
  return !!script && path.basename(script) === "sandbox.js" && path.resolve(script) === fileURLToPath(import.meta.url);
}

if (runDirectly()) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`basalt sandbox: ${describeError(err)}\n`);
    process.exit(1);
  });
}
