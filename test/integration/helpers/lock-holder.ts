// A process that takes an etcd mutex and holds it until it is killed: a lock holder that dies
// without unlocking. Arguments: endpoint, etcd PKI directory, lock key, session TTL in seconds.
import { adminTls, EtcdClient } from "../../../agent/src/sys/etcd/client.js";
import { EtcdLock } from "../../../agent/src/sys/etcd/lock.js";

const [endpoint, pkiDir, key, ttl] = process.argv.slice(2);
const lock = new EtcdLock(async () => new EtcdClient(endpoint!, await adminTls(pkiDir!)), { ttlSeconds: Number(ttl) });
await lock.withLock(key!, new AbortController().signal, async () => {
  process.stdout.write("acquired\n");
  await new Promise(() => undefined);
});
