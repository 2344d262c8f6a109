import { logger } from "../log.js";
import { nodePaths } from "../sys/paths.js";
import { runTrustd } from "../trustd/trustd.js";
import { parseFlags } from "../flags.js";

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, { listen: "string", "runtime-socket": "string" });
  const ac = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) process.once(sig, () => ac.abort());
  // Started by machined with an IPC channel: when machined is gone, so is our reason to serve.
  if (process.channel) {
    process.channel.unref();
    process.once("disconnect", () => ac.abort());
  }
  const listen = (flags["listen"] as string | undefined) ?? "0.0.0.0:50001";
  logger("trustd").info("starting", { listen });
  await runTrustd({ listen, runtimeSocket: (flags["runtime-socket"] as string | undefined) ?? nodePaths.trustdRuntimeSocket, signal: ac.signal });
}
