// The cluster-wide mutex the bootstrap manifests are applied under (Talos's etcd.WithLock on
// talos:v1:manifestApplyMutex) against a real etcd v3.5.13: holders queue in order, a waiter
// enters when the holder releases, a holder that dies frees the lock when its lease expires, and
// an abandoned wait leaves no key behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { MANIFEST_APPLY_LOCK_KEY } from "../../agent/src/controllers/k8s/manifest-apply.js";
import { adminTls, EtcdClient, type EtcdKeyValue } from "../../agent/src/sys/etcd/client.js";
import { EtcdLock, LockError } from "../../agent/src/sys/etcd/lock.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let node: EtcdNode;
let endpoint: string;
let admin: EtcdClient;
const prefix = `${MANIFEST_APPLY_LOCK_KEY}/`;

before(async () => {
  node = await etcdNode({ name: "cp-lock", root: await etcdRoot(), binaries: etcdBinaries() });
  void node.startWaiting();
  await node.until("Preparing", false);
  await node.call("Bootstrap");
  await node.until("Running");
  endpoint = `127.0.0.1:${node.ports.client}`;
  admin = await node.client();
});
after(async () => {
  admin?.close();
  await node?.close();
});

const newLock = (ttlSeconds?: number) =>
  new EtcdLock(
    async () => new EtcdClient(endpoint, await adminTls(node.paths.pkiDir)),
    ttlSeconds ? { ttlSeconds } : {},
  );

/** The waiters' keys under the lock's prefix, oldest first (at most the first and the last). */
async function queue(): Promise<EtcdKeyValue[]> {
  const first = (await admin.firstOrLastCreated({ prefix, order: "firstCreated" })).kv;
  const last = (await admin.firstOrLastCreated({ prefix, order: "lastCreated" })).kv;
  if (!first || !last) return [];
  return first.key === last.key ? [first] : [first, last];
}

/** Polls etcd until `check` holds (etcd changes land asynchronously); bounded by attempts. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** A function run under the lock that holds it until released, recording that it entered. */
function holder() {
  let release!: () => void;
  let entered!: () => void;
  const h = {
    inside: false,
    entered: new Promise<void>((r) => (entered = r)),
    release: () => release(),
    fn: async () => {
      h.inside = true;
      entered();
      await new Promise<void>((r) => (release = r));
      h.inside = false;
    },
  };
  return h;
}

test("the second holder waits in the queue until the first releases; both keys are the sessions' leases", async () => {
  const signal = new AbortController().signal;
  const a = holder();
  const b = holder();
  const runA = newLock().withLock(MANIFEST_APPLY_LOCK_KEY, signal, a.fn);
  await a.entered;
  const runB = newLock().withLock(MANIFEST_APPLY_LOCK_KEY, signal, b.fn);
  await eventually("two keys under the lock's prefix", async () => (await queue()).length === 2);
  const [first, second] = await queue();
  for (const kv of [first!, second!]) {
    // concurrency.Mutex's key: <prefix><lease ID in hex>, attached to that lease.
    assert.equal(kv.key, `${prefix}${kv.lease.toString(16)}`);
    assert.ok(kv.lease > 0n);
  }
  assert.ok(first!.createRevision < second!.createRevision);
  assert.equal(b.inside, false, "the second holder entered while the first held the lock");

  a.release();
  await runA;
  await b.entered;
  assert.deepEqual(
    (await queue()).map((kv) => kv.key),
    [second!.key],
  );
  b.release();
  await runB;
  assert.deepEqual(await queue(), []);
});

test("a holder that dies without unlocking frees the lock when its lease expires", async () => {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "helpers", "lock-holder.js");
  const child = spawn(process.execPath, [script, endpoint, node.paths.pkiDir, MANIFEST_APPLY_LOCK_KEY, "2"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(child.stdout, "data")) as [Buffer];
  assert.equal(line.toString(), "acquired\n");
  const [dead] = await queue();

  const b = holder();
  const runB = newLock().withLock(MANIFEST_APPLY_LOCK_KEY, new AbortController().signal, b.fn);
  await eventually("the waiter's key", async () => (await queue()).length === 2);
  assert.equal(b.inside, false);

  child.kill("SIGKILL");
  await once(child, "exit");
  const killedAt = Date.now();
  await b.entered;
  const waitedMs = Date.now() - killedAt;
  // The dead holder's key went with its lease (TTL 2 s), not with an unlock.
  assert.equal((await admin.getKeyValue(dead!.key)).kv, undefined);
  assert.ok(waitedMs > 500, `entered ${waitedMs} ms after the holder died: before its lease could expire`);
  b.release();
  await runB;
  assert.deepEqual(await queue(), []);
});

test("a wait that is aborted fails with LockError and leaves no key behind", async () => {
  const a = holder();
  const runA = newLock().withLock(MANIFEST_APPLY_LOCK_KEY, new AbortController().signal, a.fn);
  await a.entered;
  const ac = new AbortController();
  const b = holder();
  const runB = newLock().withLock(MANIFEST_APPLY_LOCK_KEY, ac.signal, b.fn);
  await eventually("the waiter's key", async () => (await queue()).length === 2);
  ac.abort();
  await assert.rejects(
    runB,
    (err: unknown) =>
      err instanceof LockError && err.message.startsWith(`error acquiring mutex for key ${MANIFEST_APPLY_LOCK_KEY}: `),
  );
  assert.equal(b.inside, false);
  assert.equal((await queue()).length, 1);
  a.release();
  await runA;
  assert.deepEqual(await queue(), []);
});
