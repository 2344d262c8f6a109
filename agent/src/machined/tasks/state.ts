// STATE: where the configuration lives on an installed node (reference §7.5).

import { rm } from "node:fs/promises";
import { SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { findSystemDisk } from "../../storage/system-disk.js";
import { readFileIfExists, writeFileAtomic } from "../../sys/atomic-file.js";
import { configLoadedEvent, maintenanceEvent } from "../platform-events.js";
import type { MachineRuntime } from "../runtime.js";
import { mountVolume, unmountVolume } from "./volume.js";

const log = logger("machined");

export async function mountStatePartition(r: MachineRuntime): Promise<void> {
  r.systemDisk ??= findSystemDisk(r.block);
  await mountVolume(r, "STATE", r.paths.state);
}

export async function unmountStatePartition(r: MachineRuntime): Promise<void> {
  await unmountVolume(r, "STATE");
}

/**
 * The configuration: STATE's config.yaml (or the sandbox's state directory), else the
 * platform's (talos.config=, nocloud); without a complete one, maintenance mode until one is applied.
 * The platform hears of maintenance mode and of the loaded configuration, as Talos tells it.
 */
export async function loadConfig(
  r: Pick<MachineRuntime, "paths" | "configText" | "platformConfig" | "maintenance" | "platformEvent">,
): Promise<void> {
  const stored = await readFileIfExists(r.paths.configFile);
  const fromPlatform = await r.platformConfig(!stored);
  if (stored) {
    r.configText = stored.toString("utf8");
    log.info("loaded stored configuration", { file: r.paths.configFile });
  } else if (fromPlatform !== undefined) {
    r.configText = fromPlatform;
  } else {
    r.platformEvent(maintenanceEvent);
    r.configText = await r.maintenance();
  }
  r.platformEvent(configLoadedEvent);
}

/** Writes the configuration to STATE: atomic and synced, so a power loss leaves the old or the new file. */
export async function saveConfig(r: MachineRuntime): Promise<void> {
  if (r.configText === undefined) throw new SystemError("no configuration to save");
  await writeFileAtomic(r.paths.configFile, r.configText);
}

/** Container platform reset: the stored configuration goes, so the next start is in maintenance mode. */
export async function removeStoredConfig(r: MachineRuntime): Promise<void> {
  await rm(r.paths.configFile, { force: true });
}
