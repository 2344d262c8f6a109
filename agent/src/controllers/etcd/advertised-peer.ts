// etcd.AdvertisedPeerController: while the etcd service runs healthy, the local member's peer
// URLs follow EtcdSpec's advertised addresses (https://<address>:2380 each, in order), updated
// in etcd with MemberUpdate when they differ, as Talos does when `advertisedSubnets` or the
// node's addresses change. It publishes no resource.
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  ETCD_NAMESPACE,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdSpecSpec,
} from "../../resources/catalog/etcd.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../resources/catalog/runtime.js";
import { BasaltError } from "../../errors.js";
import { adminTls, EtcdClient } from "../../sys/etcd/client.js";
import { etcdClientPort, etcdPeerPort } from "../../sys/etcd/paths.js";

/** The local member as its own etcd reports it. */
export interface LocalPeer {
  id: bigint;
  peerURLs: string[];
}

/** The local etcd member's peer URLs: read and replaced. */
export interface LocalPeerAccess {
  get(): Promise<LocalPeer>;
  update(id: bigint, peerURLs: string[]): Promise<void>;
}

/** The member list did not hold the member that answered it. */
export class LocalMemberNotFoundError extends BasaltError {}

/**
 * LocalPeerAccess over a client of `endpoint` (Talos's NewLocalClient): the local member is the
 * one whose ID is the member list's header member ID.
 */
export function localPeerAccess(
  tls: () => ReturnType<typeof adminTls>,
  endpoint = `localhost:${etcdClientPort}`,
): LocalPeerAccess {
  const withClient = async <T>(fn: (c: EtcdClient) => Promise<T>): Promise<T> => {
    const client = new EtcdClient(endpoint, await tls(), { callTimeoutMs: 30_000 });
    try {
      return await fn(client);
    } finally {
      client.close();
    }
  };
  return {
    get: () =>
      withClient(async (c) => {
        const { header, members } = await c.memberList();
        const local = members.find((m) => m.id === header.memberId);
        if (!local)
          throw new LocalMemberNotFoundError("local member not found in member list", {
            memberId: header.memberId.toString(),
          });
        return { id: local.id, peerURLs: local.peerURLs };
      }),
    update: (id, peerURLs) => withClient(async (c) => void (await c.memberUpdate(id, peerURLs))),
  };
}

const joinHostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

export class AdvertisedPeerController implements Controller {
  readonly name = "etcd.AdvertisedPeerController";
  readonly inputs = [
    { namespace: ETCD_NAMESPACE, type: EtcdSpecType, id: EtcdSpecId, kind: "weak" as const },
    { namespace: ETCD_NAMESPACE, type: EtcdPKIStatusType, id: EtcdPKIStatusId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "etcd", kind: "weak" as const },
  ];
  readonly outputs = [];

  constructor(
    private readonly peers: LocalPeerAccess,
    /** etcd's peer port (Talos: constants.EtcdPeerPort). */
    private readonly peerPort = etcdPeerPort,
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const svc = ctx.get<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, "etcd")?.spec;
    if (!svc?.running || !svc.healthy) return;
    const spec = ctx.get<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId)?.spec;
    if (!spec || !ctx.get(ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId)) return;
    const wanted = spec.advertisedAddresses.map((a) => `https://${joinHostPort(a, this.peerPort)}`);
    const local = await this.peers.get();
    if (wanted.length === local.peerURLs.length && wanted.every((u, i) => u === local.peerURLs[i])) return;
    ctx.log.debug("updating etcd peer URLs", {
      current_peer_urls: local.peerURLs,
      new_peer_urls: wanted,
      member_id: local.id.toString(),
    });
    await this.peers.update(local.id, wanted);
    ctx.log.info("updated etcd peer URLs", { new_peer_urls: wanted, member_id: local.id.toString() });
  }
}
