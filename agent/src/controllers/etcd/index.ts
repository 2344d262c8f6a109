import type { Controller } from "../../resources/controller-runtime.js";
import { EtcdController, EtcdRootController } from "../secrets/etcd.js";
import { adminTls } from "../../sys/etcd/client.js";
import { AdvertisedPeerController, localPeerAccess, type LocalPeerAccess } from "./advertised-peer.js";
import { EtcdConfigController } from "./config.js";
import { EtcdMemberController } from "./member.js";
import { EtcdPKIController } from "./pki.js";
import { EtcdSpecController } from "./spec.js";

export interface EtcdControllersOptions {
  /** Where the etcd PKI is written (Talos: /system/secrets/etcd). */
  pkiDir: string;
  /** Its owner (Talos: etcd's user 60); the sandbox, not root, keeps its own. */
  pkiOwner?: { uid: number; gid: number };
  /** Asks the local etcd member for its ID. */
  localMemberId(signal: AbortSignal): Promise<bigint>;
  /** The local member's peer URLs (default: the member on localhost:2379, admin certificate from pkiDir). */
  localPeers?: LocalPeerAccess;
}

/**
 * Every etcd controller, for machined's one registration list. They run on every node, as on
 * Talos; only a control plane's config gives them anything to do.
 */
export function etcdControllers(opts: EtcdControllersOptions): Controller[] {
  return [
    new EtcdRootController(),
    new EtcdController(),
    new EtcdConfigController(),
    new EtcdSpecController(),
    new EtcdPKIController(opts.pkiDir, opts.pkiOwner),
    new EtcdMemberController(opts.localMemberId),
    new AdvertisedPeerController(opts.localPeers ?? localPeerAccess(() => adminTls(opts.pkiDir))),
  ];
}
