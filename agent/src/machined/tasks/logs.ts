import path from "node:path";
import type { MachineRuntime } from "../runtime.js";

/** From here on, every service's log is also kept in /var/log/<id>.log (EPHEMERAL on a node). */
export async function spillServiceLogs(r: MachineRuntime): Promise<void> {
  r.supervisor.logs.spillTo(path.join(r.paths.var, "log"));
}

/** Ends the copies in /var/log before EPHEMERAL is unmounted (the rings keep the logs). */
export async function closeServiceLogFiles(r: MachineRuntime): Promise<void> {
  await r.supervisor.logs.closeFiles();
}
