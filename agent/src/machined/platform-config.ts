// The configuration a node gets from its platform at boot (talos.config=, metal-iso,
// nocloud, a cloud's user data), checked as an applied one is. One that cannot be loaded or
// does not validate is shown on the console problem by problem and published as
// ConfigLoadErrorEvent or ConfigValidationErrorEvent; the node then waits in maintenance
// mode, reachable. A cloud's network and PlatformMetadata are read beside it, in the background.

import type { ConfigBundle } from "../config/bundle.js";
import { ConfigParseError, describeError, InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import type { PlatformNetwork } from "../controllers/runtime/platform-network.js";
import type { PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import { checkConfig, type ConfigChecker } from "./apply/index.js";
import { acquireFromPlatform, type AcquireDeps } from "./config-source/acquire.js";
import { gunzipIfCompressed } from "./config-source/download.js";
import type { EventBus } from "./events.js";
import { readCloudNetwork, readCloudUserData, type CloudReadDeps } from "./platforms/cloud-source.js";
import type { RetryTiming } from "./platforms/retry.js";
import { cloudPlatform } from "./platforms/index.js";
import { nodePlatformIo } from "./platforms/io.js";
import type { MetadataHttp } from "./platforms/metadata-http.js";
import type { VmwareBackdoor } from "../sys/vmware-backdoor.js";
import type { CloudPlatform, PlatformEvent } from "./platforms/platform.js";
import { configFailedEvent } from "./platform-events.js";

const consoleLog = logger("config");

export interface PlatformConfigDeps extends AcquireDeps {
  checker: ConfigChecker<ConfigBundle>;
  events: EventBus;
  /** Publishes what the platform said about the machine (PlatformMetadata). */
  setMetadata(metadata: PlatformMetadataSpec): void;
  /** Publishes the network settings it gave (platform-layer specs). */
  setNetwork(network: PlatformNetwork | undefined): void;
  /** Tells the platform the configuration could not be loaded (platform-events.ts). */
  platformEvent?(event: PlatformEvent): void;
  /** A cloud platform's metadata service (or VMware's backdoor) reached another way, and its retry timing (tests). */
  cloud?: {
    http?: MetadataHttp;
    vmwareBackdoor?: VmwareBackdoor;
    userDataRetry?: RetryTiming;
    networkRetry?: RetryTiming;
    downloadRetry?: RetryTiming;
  };
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
  const cloud = cloudPlatform(d.platform.name);
  if (cloud) return configFromCloud(d, cloud, wantConfig);
  let acquired;
  try {
    acquired = await acquireFromPlatform(d, wantConfig);
  } catch (err) {
    if (d.signal.aborted) throw err;
    d.setMetadata({ platform: d.platform.name });
    loadFailed(d, err);
    return undefined;
  }
  d.setMetadata(acquired.metadata);
  d.setNetwork(acquired.network);
  if (!acquired.config) return undefined;
  return checkedConfig(d, acquired.config.data, acquired.config.source);
}

function loadFailed(d: PlatformConfigDeps, err: unknown): void {
  const message = describeError(err);
  consoleLog.error("failed to load the machine configuration from the platform; entering maintenance mode", {
    platform: d.platform.name,
  });
  consoleLog.error(message);
  reportFailure(d, "machine.ConfigLoadErrorEvent", message);
}

/** Published as Talos's acquire controller does: an event on the API, and one to the platform. */
function reportFailure(
  d: PlatformConfigDeps,
  type: "machine.ConfigLoadErrorEvent" | "machine.ConfigValidationErrorEvent",
  error: string,
): void {
  d.events.publish(type, { error });
  d.platformEvent?.(configFailedEvent(error));
}

/**
 * A cloud: its network and PlatformMetadata read in the background until they are (the copy
 * on STATE serves meanwhile), its user data read now when the node has no configuration.
 */
async function configFromCloud(
  d: PlatformConfigDeps,
  cloud: CloudPlatform,
  wantConfig: boolean,
): Promise<string | undefined> {
  const read: CloudReadDeps = {
    platform: cloud,
    io: nodePlatformIo({
      state: d.state,
      mounter: d.mounter,
      mountDir: d.mountDir,
      signal: d.signal,
      cmdline: d.cmdline,
      log: d.log,
      ...(d.cloud?.http ? { http: d.cloud.http } : {}),
      ...(d.cloud?.vmwareBackdoor ? { vmwareBackdoor: d.cloud.vmwareBackdoor } : {}),
      ...(d.cloud?.downloadRetry ? { retry: d.cloud.downloadRetry } : {}),
    }),
    signal: d.signal,
    networkReady: d.networkReady,
    log: d.log,
  };
  void readCloudNetwork(
    read,
    {
      read: (config) => {
        consoleLog.info("platform network configuration read", { platform: cloud.name, ...config.metadata });
        d.setMetadata(config.metadata ?? { platform: cloud.name });
        d.setNetwork({ config });
      },
      bad: (error) => d.events.publish("machine.ConfigLoadErrorEvent", { error }),
    },
    d.cloud?.networkRetry,
  );
  if (!wantConfig) return undefined;
  let userData: Buffer | undefined;
  try {
    userData = await readCloudUserData(read, d.cloud?.userDataRetry);
  } catch (err) {
    if (d.signal.aborted) throw err;
    loadFailed(d, err);
    return undefined;
  } finally {
    if (!d.signal.aborted) await cloud.afterUserData?.(read.io);
  }
  if (!userData) {
    consoleLog.warn(`platform ${cloud.name} gives no user data; entering maintenance mode`);
    return undefined;
  }
  let data: Buffer;
  try {
    data = gunzipIfCompressed(userData);
  } catch (err) {
    loadFailed(d, err);
    return undefined;
  }
  return checkedConfig(d, data, `${cloud.name} user data`);
}

/** The configuration text when it loads, validates and is complete for boot; otherwise why not, on the console and as an event. */
function checkedConfig(d: PlatformConfigDeps, data: Buffer, source: string): string | undefined {
  try {
    const { config, warnings } = checkConfig(d.checker, data);
    for (const w of warnings) consoleLog.warn("config validation warning", { source, warning: w });
    if (!config.completeForBoot) {
      consoleLog.warn(
        "the platform's configuration is not complete for boot (no machine document); entering maintenance mode",
        { source },
      );
      return undefined;
    }
    consoleLog.info("machine configuration loaded from the platform", { source });
    return data.toString("utf8");
  } catch (err) {
    if (!(err instanceof ConfigParseError) && !(err instanceof InvalidInputError)) throw err;
    const problems = problemsOf(err);
    const validation = err instanceof InvalidInputError;
    consoleLog.error(
      `the machine configuration from ${source} ${validation ? "does not validate" : "could not be loaded"} (${problems.length} ${problems.length === 1 ? "problem" : "problems"}); entering maintenance mode`,
    );
    for (const p of problems) consoleLog.error(`  * ${p}`);
    const error = validation
      ? `failed to validate config acquired via platform ${d.platform.name}: ${describeError(err)}`
      : `failed to load config via platform ${d.platform.name}: ${describeError(err)}`;
    reportFailure(d, validation ? "machine.ConfigValidationErrorEvent" : "machine.ConfigLoadErrorEvent", error);
    return undefined;
  }
}
