// EtcdMember `local`: this node's etcd member ID (%016x) while the etcd service runs healthy,
// read from the local member (an AlarmList header, as Talos reads it); gone otherwise.
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  ETCD_NAMESPACE,
  EtcdLocalMemberId,
  EtcdMemberType,
  formatMemberId,
  type EtcdMemberSpec,
} from "../../resources/catalog/etcd.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../resources/catalog/runtime.js";

const etcdServiceId = "etcd";

export class EtcdMemberController implements Controller {
  readonly name = "etcd.MemberController";
  readonly inputs = [{ namespace: RUNTIME_NAMESPACE, type: ServiceType, id: etcdServiceId, kind: "strong" as const }];
  readonly outputs = [{ type: EtcdMemberType }];

  /** `localMemberId`: asks the local etcd member for its ID. */
  constructor(private readonly localMemberId: (signal: AbortSignal) => Promise<bigint>) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const svc = ctx.get<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, etcdServiceId)?.spec;
    if (!svc?.running || !svc.healthy) {
      ctx.destroyOthers(ETCD_NAMESPACE, EtcdMemberType, new Set());
      return;
    }
    const id = formatMemberId(await this.localMemberId(ctx.signal));
    ctx.modify<EtcdMemberSpec>(ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId, () => ({ memberID: id }));
  }
}
