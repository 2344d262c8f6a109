// The configuration a node gets from its platform at boot (talos.config=, metal-iso,
// nocloud), checked as an applied one is. One that cannot be loaded or does not validate
// is shown on the console problem by problem and published as ConfigLoadErrorEvent or
// ConfigValidationErrorEvent; the node then waits in maintenance mode, reachable.

import type { ConfigBundle } from "../config/bundle.js";
import { ConfigParseError, describeError, InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import type { PlatformNetwork } from "../controllers/runtime/platform-network.js";
import type { PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import { checkConfig, type ConfigChecker } from "./apply/index.js";
import { acquireFromPlatform, type AcquireDeps } from "./config-source/acquire.js";
import type { EventBus } from "./events.js";

const consoleLog = logger("config");

export interface PlatformConfigDeps extends AcquireDeps {
  checker: ConfigChecker<ConfigBundle>;
  events: EventBus;
  /** Publishes what the platform said about the machine (PlatformMetadata). */
  setMetadata(metadata: PlatformMetadataSpec): void;
  /** Publishes the network settings it gave (platform-layer specs). */
  setNetwork(network: PlatformNetwork | undefined): void;
}

function problemsOf(err: unknown): string[] {
  const problems = (err as { fields?: { problems?: unknown } }).fields?.problems;
  return Array.isArray(problems) && problems.length > 0 ? problems.map(String) : [describeError(err)];
}

/**
 * The platform's configuration text when it offers a valid, complete one and `wantConfig`;
 * undefined otherwise (maintenance mode follows). PlatformMetadata is published either way.
 */
export async function configFromPlatform(d: PlatformConfigDeps, wantConfig: boolean): Promise<string | undefined> {
  let acquired;
  try {
    acquired = await acquireFromPlatform(d, wantConfig);
  } catch (err) {
    if (d.signal.aborted) throw err;
    d.setMetadata({ platform: d.platform.name });
    const message = describeError(err);
    consoleLog.error("failed to load the machine configuration from the platform; entering maintenance mode", { platform: d.platform.name });
    consoleLog.error(message);
    d.events.publish("machine.ConfigLoadErrorEvent", { error: message });
    return undefined;
  }
  d.setMetadata(acquired.metadata);
  d.setNetwork(acquired.network);
  if (!acquired.config) return undefined;
  const { data, source } = acquired.config;
  try {
    const { config, warnings } = checkConfig(d.checker, data);
    for (const w of warnings) consoleLog.warn("config validation warning", { source, warning: w });
    if (!config.completeForBoot) {
      consoleLog.warn("the platform's configuration is not complete for boot (no machine document); entering maintenance mode", { source });
      return undefined;
    }
    consoleLog.info("machine configuration loaded from the platform", { source });
    return data.toString("utf8");
  } catch (err) {
    if (!(err instanceof ConfigParseError) && !(err instanceof InvalidInputError)) throw err;
    const problems = problemsOf(err);
    const validation = err instanceof InvalidInputError;
    consoleLog.error(`the machine configuration from ${source} ${validation ? "does not validate" : "could not be loaded"} (${problems.length} ${problems.length === 1 ? "problem" : "problems"}); entering maintenance mode`);
    for (const p of problems) consoleLog.error(`  * ${p}`);
    const error = validation ? `failed to validate config acquired via platform ${d.platform.name}: ${describeError(err)}` : `failed to load config via platform ${d.platform.name}: ${describeError(err)}`;
    d.events.publish(validation ? "machine.ConfigValidationErrorEvent" : "machine.ConfigLoadErrorEvent", { error });
    return undefined;
  }
}
