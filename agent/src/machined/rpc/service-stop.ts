import { ConflictError, NotFoundError } from "../../errors.js";
import type { Supervisor } from "../../services/supervisor.js";

/** States in which Talos counts a service as not running (a stop has nothing to do). */
const stopped: ReadonlySet<string> = new Set(["Initialized", "Finished", "Failed", "Skipped"]);

/** Only extension services may be stopped through the API (Talos's APIStopAllowed). */
function stopAllowed(id: string): boolean {
  return id.startsWith("ext-");
}

/** machine.ServiceStop, as Talos's APIStop: unknown ids and services that may not be stopped are refused. */
export async function serviceStopResponse(supervisor: Supervisor, id: string) {
  const status = supervisor.get(id);
  if (!status) throw new NotFoundError(`service "${id}" not defined`, { id });
  if (!stopped.has(status.state)) {
    if (!stopAllowed(id)) throw new ConflictError(`service "${id}" doesn't support stop operation via API`, { id });
    await supervisor.stop(id, "ServiceStop requested through the API");
  }
  return { messages: [{ resp: `Service "${id}" stopped` }] };
}
