// The etcd PKI on disk, as Talos's etcd.PKIController: the CA and the server, peer and admin
// pairs in /system/secrets/etcd (directory 0700, files 0400, everything owned by etcd's user 60),
// then PKIStatus `etcd` saying which EtcdSecrets version is written.
import { chown, mkdir, readdir, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  ETCD_NAMESPACE,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdRootSecretsId,
  EtcdRootSecretsType,
  EtcdSecretsId,
  EtcdSecretsType,
  type EtcdCertsSpec,
  type EtcdPKIStatusSpec,
  type EtcdRootSpec,
} from "../../resources/catalog/etcd.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import { etcdPkiFiles as f, etcdUserId } from "../../sys/etcd/paths.js";

export interface EtcdPkiOwner {
  uid: number;
  gid: number;
}

/** Writes the PKI into `dir` and hands the directory and its files to `owner` (Talos: 60:60). */
export async function writeEtcdPki(
  dir: string,
  root: EtcdRootSpec,
  certs: EtcdCertsSpec,
  owner: EtcdPkiOwner = { uid: etcdUserId, gid: etcdUserId },
): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files: [string, string][] = [
    [f.caCert, root.etcdCA.crt],
    [f.caKey, root.etcdCA.key],
    [f.serverKey, certs.etcd.key],
    [f.serverCert, certs.etcd.crt],
    [f.peerKey, certs.etcdPeer.key],
    [f.peerCert, certs.etcdPeer.crt],
    [f.adminKey, certs.etcdAdmin.key],
    [f.adminCert, certs.etcdAdmin.crt],
  ];
  for (const [name, pem] of files) {
    const file = path.join(dir, name);
    // A 0400 file from an earlier write: replace it rather than open it for writing.
    await writeFile(`${file}.tmp`, pem, { mode: 0o400 });
    await rename(`${file}.tmp`, file);
  }
  await chown(dir, owner.uid, owner.gid);
  for (const name of await readdir(dir)) await chown(path.join(dir, name), owner.uid, owner.gid);
}

export class EtcdPKIController implements Controller {
  readonly name = "etcd.PKIController";
  readonly inputs = [
    { namespace: SECRETS_NAMESPACE, type: EtcdRootSecretsType, id: EtcdRootSecretsId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: EtcdSecretsType, id: EtcdSecretsId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: EtcdPKIStatusType }];

  constructor(
    private readonly dir: string,
    private readonly owner: EtcdPkiOwner = { uid: etcdUserId, gid: etcdUserId },
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<EtcdRootSpec>(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId)?.spec;
    const certs = ctx.get<EtcdCertsSpec>(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId);
    if (!root || !certs) return;
    await writeEtcdPki(this.dir, root, certs.spec, this.owner);
    const version = String(certs.metadata.version);
    ctx.modify<EtcdPKIStatusSpec>(ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId, () => ({ ready: true, version }));
  }
}
