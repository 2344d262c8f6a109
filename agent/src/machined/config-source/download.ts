// Downloading a machine configuration (talos.config=<url>): every attempt takes the URL
// anew (its variables may have appeared since), a failure the network may cure (no route,
// refused, a timeout, a 5xx, 408, 429) is retried with exponential backoff until the
// overall timeout; an answer that cannot change (another 4xx) ends it at once.

import { readFile } from "node:fs/promises";
import { gunzipSync } from "node:zlib";
import { setTimeout as sleep } from "node:timers/promises";
import { describeError, NotFoundError, SystemError } from "../../errors.js";
import type { Logger } from "../../log.js";

/** A download that retrying cannot help (the server's final answer), or that ran out of time. */
export class ConfigDownloadError extends SystemError {}

export interface DownloadOptions {
  /** The URL to fetch on this attempt (with its variables filled in). */
  endpoint(signal: AbortSignal): Promise<string>;
  signal: AbortSignal;
  log: Logger;
  /** Talos: 3 min per attempt, 3 h in all. */
  attemptTimeoutMs?: number;
  totalTimeoutMs?: number;
  /** Backoff before retry n (1-based): 1 s doubling, at most 30 s. */
  backoffMs?(attempt: number): number;
  wait?(ms: number, signal: AbortSignal): Promise<unknown>;
}

class Retryable extends Error {}

const gzipMagic = [0x1f, 0x8b];

/** A gzip-compressed configuration is unpacked (detected by its magic bytes, as Talos does). */
export function gunzipIfCompressed(data: Buffer): Buffer {
  if (data.length >= 2 && data[0] === gzipMagic[0] && data[1] === gzipMagic[1]) {
    try {
      return gunzipSync(data);
    } catch (err) {
      throw new ConfigDownloadError("error unzipping machine config", {}, { cause: err });
    }
  }
  return data;
}

async function attempt(url: string, signal: AbortSignal): Promise<Buffer> {
  const parsed = new URL(url);
  if (parsed.protocol === "file:") {
    return readFile(decodeURIComponent(parsed.pathname)).catch((err: unknown) => {
      throw new NotFoundError(`reading ${parsed.pathname} failed`, { url }, { cause: err });
    });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new ConfigDownloadError(`unsupported URL scheme ${parsed.protocol}`, { url });
  let res: Response;
  try {
    res = await fetch(url, { signal, redirect: "follow" });
  } catch (err) {
    throw new Retryable(describeError(err));
  }
  if (res.status !== 200) {
    const body = Buffer.from(await res.arrayBuffer().catch(() => new ArrayBuffer(0)))
      .subarray(0, 32)
      .toString("utf8");
    const message = `failed to download config, status code ${res.status}, body ${JSON.stringify(body)}`;
    if (res.status >= 500 || res.status === 408 || res.status === 429) throw new Retryable(message);
    throw new ConfigDownloadError(message, { url, status: res.status });
  }
  try {
    return Buffer.from(await res.arrayBuffer());
  } catch (err) {
    throw new Retryable(`read config: ${describeError(err)}`);
  }
}

export async function downloadConfig(opts: DownloadOptions): Promise<Buffer> {
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 3 * 60_000;
  const deadline = Date.now() + (opts.totalTimeoutMs ?? 3 * 3600_000);
  const backoff = opts.backoffMs ?? ((n: number) => Math.min(30_000, 1000 * 2 ** (n - 1)));
  const wait = opts.wait ?? ((ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }));
  for (let n = 1; ; n++) {
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(attemptTimeoutMs)]);
    let url = "";
    try {
      // The URL's variables may not be known yet (no link, no hostname): a reason to retry.
      url = await opts.endpoint(signal).catch((err: unknown) => {
        throw new Retryable(describeError(err));
      });
      opts.log.info("fetching machine config", { url, attempt: n });
      return gunzipIfCompressed(await attempt(url, signal));
    } catch (err) {
      if (opts.signal.aborted) throw err;
      const timedOut = signal.aborted;
      if (!(err instanceof Retryable) && !timedOut) throw err;
      const delay = backoff(n);
      if (Date.now() + delay > deadline)
        throw new ConfigDownloadError(
          `failed to download config from ${JSON.stringify(url)}: ${describeError(err)} (gave up after ${n} attempts)`,
          { url },
        );
      opts.log.warn("fetching machine config failed; retrying", {
        url,
        attempt: n,
        retryInMs: delay,
        error: describeError(err),
      });
      await wait(delay, opts.signal);
    }
  }
}
