import { runApid } from "../apid/apid.js";
import { logger } from "../log.js";
import { nodePaths } from "../sys/paths.js";
import { parseFlags } from "../flags.js";

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, {
    listen: "string",
    "machined-socket": "string",
    "enable-rbac": "boolean",
    "check-ext-key-usage": "boolean",
    "apid-socket": "string",
  });
  const ac = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) process.once(sig, () => ac.abort());
  // Started by machined with an IPC channel: when machined is gone, so is our reason to serve.
  if (process.channel) {
    process.channel.unref();
    process.once("disconnect", () => ac.abort());
  }
  logger("apid").info("starting", { listen: flags["listen"] ?? "0.0.0.0:50000" });
  await runApid({
    listen: (flags["listen"] as string | undefined) ?? "0.0.0.0:50000",
    machinedSocket: (flags["machined-socket"] as string | undefined) ?? nodePaths.machinedSocket,
    enableRbac: flags["enable-rbac"] !== false,
    checkExtKeyUsage: flags["check-ext-key-usage"] === true,
    apidSocket: (flags["apid-socket"] as string | undefined) ?? nodePaths.apidSocket,
    signal: ac.signal,
  });
}
