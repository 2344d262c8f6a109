import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { servicesStartingEvent } from "../platform-events.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/**
 * Starts every service of this node that is not running yet. Each waits for its dependencies and
 * conditions in the supervisor (a worker's apid for its certificate from trustd, however long):
 * the boot does not wait for them; Service resources and MachineStatus's unmet conditions tell.
 * The platform hears of it as activation, as from Talos.
 */
export async function startAllServices(r: MachineRuntime): Promise<void> {
  r.platformEvent(servicesStartingEvent);
  for (const def of r.services()) {
    const current = r.supervisor.get(def.id);
    if (current && current.state !== "Finished" && current.state !== "Failed") continue;
    r.supervisor
      .start(def)
      .catch((err: unknown) => log.error(`starting ${def.id} failed`, { error: describeError(err) }));
  }
  log.info("Basalt is ready for user interaction");
}

/** Stops every service in reverse dependency order (the supervisor keeps that order). */
export async function stopAllServices(r: MachineRuntime): Promise<void> {
  await r.supervisor.stopAll();
}
