import { splitEnvEntry, userEnvironment } from "../../config/environment.js";
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
    const { key, value } = splitEnvEntry(entry);
    if (key !== "" && value !== undefined) process.env[key] = value;
  }
  if (entries.length > 0) log.info("environment set", { variables: entries.map((e) => splitEnvEntry(e).key) });
}
