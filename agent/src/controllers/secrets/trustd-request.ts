import { setTimeout as delay } from "node:timers/promises";
import { SystemError } from "../../errors.js";

export interface TrustdRequest {
  token: string;
  /** OS CA certificate(s) that trustd's server certificate must chain to. */
  caPem: string;
  csrPem: string;
}

/** One Certificate call to trustd at `endpoint` (host:port), ended when `signal` aborts. */
export type TrustdAttempt = (
  endpoint: string,
  req: TrustdRequest,
  signal: AbortSignal,
) => Promise<{ ca: string; crt: string }>;

export interface RetryPolicy {
  /** Whole request, as Talos's remote generator: 1 min. */
  totalMs: number;
  /** Each attempt: 10 s. */
  attemptMs: number;
  /** First delay between attempts, doubled after each (1 s). */
  firstDelayMs: number;
}

export const trustdRetry: RetryPolicy = { totalMs: 60_000, attemptMs: 10_000, firstDelayMs: 1000 };

export interface RequestDeps {
  attempt: TrustdAttempt;
  policy?: RetryPolicy;
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Called after every failed attempt (the controller says what the node waits for). */
  onFailure?: (endpoint: string, err: unknown) => void;
}

// An aborted wait just ends early: the loop checks the signal.
const realSleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }).catch(() => undefined);

/**
 * Asks trustd to sign `req.csrPem`: endpoints in turn (round robin), each attempt
 * bounded by `attemptMs`, exponential backoff between attempts, until one answers
 * or `totalMs` has passed (then a SystemError carrying the last failure).
 */
export async function requestCertificate(
  endpoints: readonly string[],
  req: TrustdRequest,
  signal: AbortSignal,
  deps: RequestDeps,
): Promise<{ ca: string; crt: string; endpoint: string }> {
  if (endpoints.length === 0) throw new SystemError("no control-plane endpoint to request a certificate from");
  const policy = deps.policy ?? trustdRetry;
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? realSleep;
  const deadline = now() + policy.totalMs;
  let backoff = policy.firstDelayMs;
  let lastError: unknown;
  for (let i = 0; !signal.aborted; i++) {
    const endpoint = endpoints[i % endpoints.length]!;
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    signal.addEventListener("abort", stop, { once: true });
    const timer = setTimeout(stop, Math.min(policy.attemptMs, Math.max(0, deadline - now())));
    try {
      return { ...(await deps.attempt(endpoint, req, attempt.signal)), endpoint };
    } catch (err) {
      lastError = err;
      deps.onFailure?.(endpoint, err);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", stop);
    }
    const left = deadline - now();
    if (left <= 0) break;
    await sleep(Math.min(backoff, left), signal);
    backoff *= 2;
  }
  throw new SystemError(
    `no certificate from trustd at ${endpoints.join(", ")}`,
    { endpoints },
    { cause: lastError ?? "aborted" },
  );
}
