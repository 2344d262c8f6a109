import assert from "node:assert/strict";
import { test } from "node:test";
import { SystemError } from "../../../../agent/src/errors.js";
import { requestCertificate, type TrustdAttempt } from "../../../../agent/src/controllers/secrets/trustd-request.js";

const req = { token: "t", caPem: "ca", csrPem: "csr" };

/** A clock that only moves when the code under test sleeps or an attempt takes time. */
function fakeClock() {
  let now = 0;
  const sleeps: number[] = [];
  return {
    now: () => now,
    advance: (ms: number) => (now += ms),
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

test("endpoints are tried in turn with doubling delays until one answers", async () => {
  const clock = fakeClock();
  const tried: string[] = [];
  const attempt: TrustdAttempt = async (endpoint) => {
    tried.push(endpoint);
    if (tried.length < 4) throw new Error(`connect ECONNREFUSED ${endpoint}`);
    return { ca: "CA", crt: "CRT" };
  };
  const failures: string[] = [];
  const res = await requestCertificate(["a:50001", "b:50001"], req, new AbortController().signal, {
    attempt,
    now: clock.now,
    sleep: clock.sleep,
    onFailure: (endpoint) => failures.push(endpoint),
  });
  assert.deepEqual(res, { ca: "CA", crt: "CRT", endpoint: "b:50001" });
  assert.deepEqual(tried, ["a:50001", "b:50001", "a:50001", "b:50001"]);
  assert.deepEqual(failures, ["a:50001", "b:50001", "a:50001"]);
  assert.deepEqual(clock.sleeps, [1000, 2000, 4000]);
});

test("an unreachable control plane: retried with backoff for a minute, then the last error", async () => {
  const clock = fakeClock();
  let attempts = 0;
  const attempt: TrustdAttempt = async () => {
    attempts++;
    clock.advance(10_000); // each attempt runs into its 10 s deadline
    throw new Error("deadline exceeded");
  };
  const err = await requestCertificate(["cp:50001"], req, new AbortController().signal, {
    attempt,
    now: clock.now,
    sleep: clock.sleep,
  }).then(
    () => assert.fail("expected a failure"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SystemError);
  assert.equal((err as Error).message, "no certificate from trustd at cp:50001");
  assert.equal(((err as Error).cause as Error).message, "deadline exceeded");
  assert.equal(attempts, 5);
  assert.deepEqual(clock.sleeps, [1000, 2000, 4000, 8000]);
});

test("each attempt is ended by its own deadline", async () => {
  const attempts: { at: number; lasted: number }[] = [];
  const started = Date.now();
  const attempt: TrustdAttempt = (_e, _r, signal) =>
    new Promise((_resolve, reject) => {
      const at = Date.now();
      signal.addEventListener("abort", () => {
        attempts.push({ at: at - started, lasted: Date.now() - at });
        reject(new Error("cancelled"));
      });
    });
  await assert.rejects(
    requestCertificate(["cp:50001"], req, new AbortController().signal, {
      attempt,
      policy: { totalMs: 400, attemptMs: 60, firstDelayMs: 10 },
    }),
  );
  assert.ok(attempts.length >= 2, `attempts: ${attempts.length}`);
  // An attempt started with a whole attempt's time left runs that long; later ones get only what is left.
  for (const a of attempts.filter((a) => a.at < 400 - 60 - 10))
    assert.ok(a.lasted >= 50 && a.lasted < 1000, `attempt at ${a.at} ms lasted ${a.lasted} ms`);
  assert.ok(
    attempts.some((a) => a.at < 400 - 60 - 10),
    "the first attempt started at once",
  );
  assert.ok(Date.now() - started < 2000);
});
