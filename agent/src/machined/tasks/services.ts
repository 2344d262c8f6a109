import type { MachineRuntime } from "../runtime.js";

/** Stops every service in reverse dependency order (the supervisor keeps that order). */
export async function stopAllServices(r: MachineRuntime): Promise<void> {
  await r.supervisor.stopAll();
}
