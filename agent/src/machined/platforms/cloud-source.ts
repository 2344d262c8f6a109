// Reading a cloud platform at boot, as Talos does it: the user data in the foreground with
// exponential backoff while the service cannot be reached (until the config load timeout),
// and the network in the background, restarted with backoff until it is read once. Neither
// ever ends the boot: a failure is a console line (and, when the service answered wrongly,
// an event), the node carries on in maintenance mode or with what it already has.

import { describeError, SystemError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { PlatformNetworkConfig } from "../../network/platform-config.js";
import { MetadataUnreachableError } from "./metadata-http.js";
import type { CloudPlatform, PlatformIo } from "./platform.js";
import {
  networkRetry,
  RetriesExhaustedError,
  retryWhileUnreachable,
  userDataRetry,
  type RetryTiming,
} from "./retry.js";

/** The platform's user data could not be had: the service answered wrongly or never answered in time. */
export class PlatformUserDataError extends SystemError {}

export interface CloudReadDeps {
  platform: CloudPlatform;
  io: PlatformIo;
  signal: AbortSignal;
  /** Resolves once the node has an address (Talos's netutils.Wait). */
  networkReady(signal: AbortSignal): Promise<void>;
  log: Logger;
}

/**
 * The instance's user data; undefined when it has none. A service that cannot be reached (or
 * answers 5xx) is asked again with backoff; any other failure, or running out of time, is a
 * PlatformUserDataError.
 */
export async function readCloudUserData(
  d: CloudReadDeps,
  timing: RetryTiming = userDataRetry,
): Promise<Buffer | undefined> {
  if (!d.platform.local) await d.networkReady(d.signal);
  d.log.info(`fetching machine config from ${d.platform.name}`);
  const what = `failed to fetch the user data of platform ${d.platform.name}`;
  try {
    return await retryWhileUnreachable(
      () => d.platform.readUserData(d.io),
      timing,
      d.signal,
      (attempt, retryInMs, err) =>
        d.log.warn("fetching the user data failed; retrying", {
          platform: d.platform.name,
          attempt,
          retryInMs,
          error: describeError(err),
        }),
    );
  } catch (err) {
    if (d.signal.aborted) throw err;
    if (err instanceof RetriesExhaustedError)
      throw new PlatformUserDataError(`${what} (${err.message})`, { platform: d.platform.name }, { cause: err.cause });
    throw new PlatformUserDataError(what, { platform: d.platform.name }, { cause: err });
  }
}

export interface NetworkReadCallbacks {
  /** The platform's network and metadata, once read. */
  read(config: PlatformNetworkConfig): void;
  /** The service answered something that is not its protocol (once per distinct failure). */
  bad(message: string): void;
}

/**
 * Reads the platform's network until it is read once (or `signal` ends), restarting with
 * backoff after each failure; resolves when done. Never rejects.
 */
export async function readCloudNetwork(
  d: CloudReadDeps,
  on: NetworkReadCallbacks,
  timing: RetryTiming = networkRetry,
): Promise<void> {
  const reported = new Set<string>();
  try {
    if (!d.platform.local) await d.networkReady(d.signal);
    d.log.info(`fetching ${d.platform.name} instance config`);
    for (let n = 1; ; n++) {
      try {
        on.read(await d.platform.readNetwork(d.io));
        return;
      } catch (err) {
        if (d.signal.aborted) return;
        const message = `failed to read the network configuration of platform ${d.platform.name}: ${describeError(err)}`;
        const delay = timing.backoffMs(n);
        if (err instanceof MetadataUnreachableError) {
          d.log.warn("the platform's metadata service is unreachable; retrying", {
            platform: d.platform.name,
            attempt: n,
            retryInMs: delay,
            error: describeError(err),
          });
        } else {
          d.log.error(message, { attempt: n, retryInMs: delay });
          if (!reported.has(message)) {
            reported.add(message);
            on.bad(message);
          }
        }
        await timing.wait(delay, d.signal);
      }
    }
  } catch (err) {
    // Only an aborted wait ends up here: the node is shutting down.
    if (!d.signal.aborted)
      d.log.error("reading the platform's network stopped", { platform: d.platform.name, error: describeError(err) });
  }
}
