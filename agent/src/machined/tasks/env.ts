import { userEnvironment } from "../../config/environment.js";
import type { ConfigBundle } from "../../config/bundle.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { logger } from "../../log.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/**
 * Talos's setUserEnvVars: `talos.environment=` and `.machine.env` become machined's own
 * environment, which the processes it starts from here on inherit (apid without the proxy
 * variables). A variable removed from the config stays until the reboot its removal needs.
 */
export async function setUserEnvVars(r: MachineRuntime): Promise<void> {
  const config = r.state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
  const entries = userEnvironment(r.cmdline, config);
  for (const entry of entries) {
    const eq = entry.indexOf("=");
    if (eq <= 0) continue;
    process.env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  if (entries.length > 0) log.info("environment set", { variables: entries.map((e) => e.split("=", 1)[0]) });
}
