// Retrying a metadata service while it cannot be reached, with exponential backoff as Talos's
// go-retry does; any other failure ends the retrying at once.

import { setTimeout as sleep } from "node:timers/promises";
import { SystemError } from "../../errors.js";
import { MetadataUnreachableError } from "./metadata-http.js";

export interface RetryTiming {
  /** Wait before retry n (1-based). */
  backoffMs(attempt: number): number;
  /** Give up once the next wait would pass this (from the first attempt). */
  totalTimeoutMs: number;
  wait(ms: number, signal: AbortSignal): Promise<unknown>;
}

const wait = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal });
const exponential = (n: number) => Math.min(30_000, 1000 * 2 ** (n - 1)) + Math.floor(Math.random() * 1000);

/** Talos's RetryFetch: 1 s doubling with up to 1 s of jitter, at most 30 s apart, for 3 h (ConfigLoadTimeout). */
export const userDataRetry: RetryTiming = { backoffMs: exponential, totalTimeoutMs: 3 * 3600_000, wait };

/** Talos's download of a platform document: the same backoff, for 3 min. */
export const downloadRetry: RetryTiming = { backoffMs: exponential, totalTimeoutMs: 3 * 60_000, wait };

/** Talos's restarts of a platform's network reading: 0.5 s growing by half each time, at most 60 s apart, forever. */
export const networkRetry: RetryTiming = {
  backoffMs: (n) => Math.min(60_000, 500 * 1.5 ** (n - 1)),
  totalTimeoutMs: Number.POSITIVE_INFINITY,
  wait,
};

/** The service stayed unreachable past the timing's total. */
export class RetriesExhaustedError extends SystemError {}

/**
 * `fn`'s result, asked again after each MetadataUnreachableError (`onRetry` told first) until
 * the next wait would pass the total: then RetriesExhaustedError with the last failure as cause.
 */
export async function retryWhileUnreachable<T>(
  fn: () => Promise<T>,
  timing: RetryTiming,
  signal: AbortSignal,
  onRetry: (attempt: number, delayMs: number, err: unknown) => void,
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    signal.throwIfAborted();
    try {
      return await fn();
    } catch (err) {
      if (signal.aborted || !(err instanceof MetadataUnreachableError)) throw err;
      const delay = timing.backoffMs(n);
      if (Date.now() - started + delay > timing.totalTimeoutMs)
        throw new RetriesExhaustedError(`gave up after ${n} attempts`, { attempts: n }, { cause: err });
      onRetry(n, delay, err);
      await timing.wait(delay, signal);
    }
  }
}

/** Talos's POST of a platform event: again every second while the endpoint cannot be reached, for 5 min. */
export const eventRetry: RetryTiming = { backoffMs: () => 1000, totalTimeoutMs: 5 * 60_000, wait };
