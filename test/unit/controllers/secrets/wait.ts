import assert from "node:assert/strict";

/** Polls `get` until it returns a value; bounded by attempts, generously, since other work may share the CPU. */
export async function until<T>(what: string, get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 2000; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  return assert.fail(`timed out waiting for ${what}`);
}
