// Where etcd's files live (Talos's constants), under a Paths root so the sandbox and tests move them.
import path from "node:path";
import type { Paths } from "../paths.js";

/** Talos's etcd user and group (constants.EtcdUserID). */
export const etcdUserId = 60;
export const etcdClientPort = 2379;
export const etcdPeerPort = 2380;

export interface EtcdPaths {
  /** /system/secrets/etcd */
  pkiDir: string;
  /** /var/lib/etcd */
  dataDir: string;
  /** /var/lib/etcd.snapshot: where EtcdRecover stores the uploaded snapshot. */
  recoverySnapshot: string;
}

export function etcdPaths(p: Paths): EtcdPaths {
  return {
    pkiDir: path.join(p.system, "secrets", "etcd"),
    dataDir: path.join(p.var, "lib", "etcd"),
    recoverySnapshot: path.join(p.var, "lib", "etcd.snapshot"),
  };
}

/** The PKI files in pkiDir, as Talos names them. */
export const etcdPkiFiles = {
  caCert: "ca.crt",
  caKey: "ca.key",
  serverCert: "server.crt",
  serverKey: "server.key",
  peerCert: "peer.crt",
  peerKey: "peer.key",
  adminCert: "admin.crt",
  adminKey: "admin.key",
} as const;
