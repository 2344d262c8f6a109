// The cluster-wide lock the bootstrap manifests are applied under: an etcd mutex taken through
// this node's own etcd member with the admin certificate (Talos's etcd.WithLock over NewLocalClient).
import { logger } from "../log.js";
import { adminTls, EtcdClient } from "../sys/etcd/client.js";
import { EtcdLock } from "../sys/etcd/lock.js";
import { etcdClientPort, etcdPaths } from "../sys/etcd/paths.js";
import type { Paths } from "../sys/paths.js";

export function manifestApplyLock(paths: Paths): EtcdLock {
  const pkiDir = etcdPaths(paths).pkiDir;
  return new EtcdLock(async () => new EtcdClient(`localhost:${etcdClientPort}`, await adminTls(pkiDir)), {
    log: logger("manifest-apply-lock"),
  });
}
