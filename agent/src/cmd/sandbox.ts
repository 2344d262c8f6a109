import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { logger } from "../log.js";
import { sandboxPlatform } from "../machined/platform.js";
import { sysfsBlock } from "../sys/block.js";
import { pathsAt } from "../sys/paths.js";
import { parseFlags } from "./flags.js";
import { entryScript, runMachinedProcess } from "./machined-run.js";

const log = logger("sandbox");

/**
 * The sandbox platform: machined and apid on a developer machine, all state
 * under a scratch directory, platform "container" (no install, as Talos in a container).
 */
export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, { "state-dir": "string", "apid-listen": "string", "trustd-listen": "string" });
  const stateDir = path.resolve((flags["state-dir"] as string | undefined) ?? path.join("_out", "sandbox"));
  const apidListen = (flags["apid-listen"] as string | undefined) ?? "127.0.0.1:50000";
  const trustdListen = (flags["trustd-listen"] as string | undefined) ?? "127.0.0.1:50001";
  mkdirSync(stateDir, { recursive: true });
  const paths = pathsAt(stateDir);
  const endpoint = apidListen.replace(/^0\.0\.0\.0:/, "127.0.0.1:");
  log.info("sandbox starting", { stateDir, apidListen, trustdListen, note: "trustd is not started yet" });
  process.stderr.write(
    [
      `Basalt sandbox: state in ${stateDir}`,
      `  maintenance mode (no config yet):  talosctl -n ${endpoint.replace(/:50000$/, "")} disks --insecure` +
        (endpoint.endsWith(":50000") ? "" : `   (talosctl --insecure needs port 50000; use our client: basalt ctl -n ${endpoint} --insecure disks)`),
      `  apply a config:  talosctl -n ${endpoint.replace(/:50000$/, "")} apply-config --insecure -f controlplane.yaml`,
      `  then, with the talosconfig from gen config:  talosctl --talosconfig talosconfig -e ${endpoint.replace(/:50000$/, "")} -n ${endpoint.replace(/:\d+$/, "")} version`,
      "",
    ].join("\n"),
  );
  const here = path.dirname(fileURLToPath(import.meta.url));
  await runMachinedProcess({
    paths,
    platform: sandboxPlatform,
    block: sysfsBlock(),
    apidListen,
    self: { command: process.execPath, args: [entryScript(here)] },
  });
}

// Run directly (`node dist/agent/src/cmd/sandbox.js ...`), as `npm start` does.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`basalt sandbox: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
