// etcd's concurrency.Mutex as Talos's etcd.WithLock takes it (go.etcd.io/etcd/client/v3/concurrency
// v3.5.13): a session is a lease (TTL 60 s) kept alive while the lock is wanted or held; a waiter
// puts `<key>/<lease ID in hex>` with that lease and holds the lock once its key is the oldest
// under `<key>/`, waiting for each older key's deletion in turn. Unlocking deletes the key; closing
// the session revokes the lease, so a holder that dies frees the lock when its lease expires.
import { BasaltError, describeError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { EtcdClient } from "./client.js";

/** concurrency's defaultSessionTTL. */
export const DEFAULT_SESSION_TTL_SECONDS = 60;

/** The lock's lease was gone before the lock was taken (concurrency.ErrSessionExpired). */
export class LockSessionExpiredError extends BasaltError {}

/** The lock could not be taken (etcd unreachable, the wait aborted). */
export class LockError extends BasaltError {}

export interface EtcdLockOptions {
  /** The session lease's TTL (Talos: concurrency's default, 60 s). */
  ttlSeconds?: number;
  log?: Logger;
}

/** The lease a lock holder keeps alive (concurrency.Session). */
class Session {
  private constructor(
    private readonly client: EtcdClient,
    readonly lease: bigint,
    private readonly keepAlive: { stop(): void },
  ) {}

  static async open(client: EtcdClient, ttlSeconds: number): Promise<Session> {
    const lease = await client.leaseGrant(ttlSeconds);
    return new Session(client, lease, client.keepAlive(lease, (ttlSeconds * 1000) / 3));
  }

  /** Stops refreshing and revokes the lease (any key still attached goes with it). */
  async close(): Promise<void> {
    this.keepAlive.stop();
    await this.client.leaseRevoke(this.lease);
  }
}

/** Waits until `myKey` (created at `myRevision`) is the oldest key under `prefix`. */
async function waitOlderKeys(
  client: EtcdClient,
  prefix: string,
  myRevision: bigint,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    const { header, kv } = await client.firstOrLastCreated({
      prefix,
      order: "lastCreated",
      maxCreateRevision: myRevision - 1n,
    });
    if (!kv) return;
    await client.waitDelete(kv.key, header.revision, signal);
  }
}

/** Takes the mutex `key` in `session`; returns the key to delete on unlock. */
async function lock(client: EtcdClient, session: Session, key: string, signal: AbortSignal): Promise<string> {
  const prefix = `${key}/`;
  const myKey = `${prefix}${session.lease.toString(16)}`;
  const acquired = await client.createIfMissing(myKey, session.lease, prefix);
  const myRevision = acquired.created ? acquired.header.revision : acquired.existing!.createRevision;
  if (!acquired.first || acquired.first.createRevision === myRevision) return myKey;
  try {
    await waitOlderKeys(client, prefix, myRevision, signal);
    // Our key is gone when the session's lease expired while waiting.
    if (!(await client.getKeyValue(myKey)).kv)
      throw new LockSessionExpiredError(`session of lock ${key} expired`, { key });
  } catch (err) {
    await client.delete(myKey).catch(() => undefined);
    throw err;
  }
  return myKey;
}

/** Runs functions under etcd mutexes, one session (lease) per call, over clients `connect` makes. */
export class EtcdLock {
  constructor(
    private readonly connect: () => Promise<EtcdClient>,
    private readonly opts: EtcdLockOptions = {},
  ) {}

  async withLock<T>(key: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    const client = await this.connect();
    try {
      const session = await Session.open(client, this.opts.ttlSeconds ?? DEFAULT_SESSION_TTL_SECONDS).catch(
        (err: unknown) => {
          throw new LockError(`error creating etcd session: ${describeError(err)}`, { key }, { cause: err });
        },
      );
      try {
        this.opts.log?.debug("waiting for mutex", { key });
        const myKey = await lock(client, session, key, signal).catch((err: unknown) => {
          throw err instanceof LockSessionExpiredError
            ? err
            : new LockError(`error acquiring mutex for key ${key}: ${describeError(err)}`, { key }, { cause: err });
        });
        this.opts.log?.debug("mutex acquired", { key });
        try {
          return await fn();
        } finally {
          this.opts.log?.debug("releasing mutex", { key });
          await client
            .delete(myKey)
            .catch((err: unknown) => this.opts.log?.error("error releasing mutex", { key, error: describeError(err) }));
        }
      } finally {
        // The lease expires on its own if etcd cannot be reached now.
        await session.close().catch(() => undefined);
      }
    } finally {
      client.close();
    }
  }
}
