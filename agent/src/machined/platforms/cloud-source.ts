// Reading a cloud platform at boot, as Talos does it: the user data in the foreground with
// exponential backoff while the service cannot be reached (until the config load timeout),
// and the network in the background, restarted with backoff until it is read once. Neither
// ever ends the boot: a failure is a console line (and, when the service answered wrongly,
// an event), the node carries on in maintenance mode or with what it already has.

import { setTimeout as sleep } from "node:timers/promises";
import { describeError, SystemError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { PlatformNetworkConfig } from "../../network/platform-config.js";
import { MetadataUnreachableError } from "./metadata-http.js";
import type { CloudPlatform, PlatformIo } from "./platform.js";

/** The platform's user data could not be had: the service answered wrongly or never answered in time. */
export class PlatformUserDataError extends SystemError {}

export interface RetryTiming {
  /** Wait before retry n (1-based). */
  backoffMs(attempt: number): number;
  /** Give up once the next wait would pass this (from the first attempt). */
  totalTimeoutMs: number;
  wait(ms: number, signal: AbortSignal): Promise<unknown>;
}

const wait = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal });

/** Talos's RetryFetch: 1 s doubling with up to 1 s of jitter, at most 30 s apart, for 3 h (ConfigLoadTimeout). */
export const userDataRetry: RetryTiming = {
  backoffMs: (n) => Math.min(30_000, 1000 * 2 ** (n - 1)) + Math.floor(Math.random() * 1000),
  totalTimeoutMs: 3 * 3600_000,
  wait,
};

/** Talos's restarts of a platform's network reading: 0.5 s growing by half each time, at most 60 s apart, forever. */
export const networkRetry: RetryTiming = {
  backoffMs: (n) => Math.min(60_000, 500 * 1.5 ** (n - 1)),
  totalTimeoutMs: Number.POSITIVE_INFINITY,
  wait,
};

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
export async function readCloudUserData(d: CloudReadDeps, timing: RetryTiming = userDataRetry): Promise<Buffer | undefined> {
  await d.networkReady(d.signal);
  const started = Date.now();
  d.log.info(`fetching machine config from ${d.platform.name}`);
  for (let n = 1; ; n++) {
    d.signal.throwIfAborted();
    try {
      return await d.platform.readUserData(d.io);
    } catch (err) {
      if (d.signal.aborted) throw err;
      if (!(err instanceof MetadataUnreachableError)) {
        throw new PlatformUserDataError(`failed to fetch the user data of platform ${d.platform.name}`, { platform: d.platform.name }, { cause: err });
      }
      const delay = timing.backoffMs(n);
      if (Date.now() - started + delay > timing.totalTimeoutMs) {
        throw new PlatformUserDataError(`failed to fetch the user data of platform ${d.platform.name} (gave up after ${n} attempts)`, { platform: d.platform.name }, { cause: err });
      }
      d.log.warn("fetching the user data failed; retrying", { platform: d.platform.name, attempt: n, retryInMs: delay, error: describeError(err) });
      await timing.wait(delay, d.signal);
    }
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
export async function readCloudNetwork(d: CloudReadDeps, on: NetworkReadCallbacks, timing: RetryTiming = networkRetry): Promise<void> {
  const reported = new Set<string>();
  try {
    await d.networkReady(d.signal);
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
          d.log.warn("the platform's metadata service is unreachable; retrying", { platform: d.platform.name, attempt: n, retryInMs: delay, error: describeError(err) });
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
    if (!d.signal.aborted) d.log.error("reading the platform's network stopped", { platform: d.platform.name, error: describeError(err) });
  }
}
