// network.StatusController: the readiness summary Talos shows as `netstatus` —
// an address on an up link, a default route, a hostname, and resolv.conf written
// (the resolver status exists once it has been written, or when files are not ours).

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  type NetworkStatusSpec,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
  ResolverStatusId,
  ResolverStatusType,
  RouteStatusType,
  type RouteStatusSpec,
} from "../../resources/catalog/network.js";

export class NetworkStatusController implements Controller {
  readonly name = "network.StatusController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.current, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: RouteStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: ResolverStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NetworkStatusType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const current =
      ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.current)?.spec.addresses ?? [];
    const routes = ctx.list<RouteStatusSpec>(NETWORK_NAMESPACE, RouteStatusType);
    const spec: NetworkStatusSpec = {
      addressReady: current.length > 0,
      connectivityReady: routes.some((r) => r.spec.dst === "" && r.spec.table === "main" && r.spec.type === "unicast"),
      hostnameReady: ctx.get(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId) !== undefined,
      etcFilesReady: ctx.get(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId) !== undefined,
    };
    ctx.modify<NetworkStatusSpec>(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, () => spec);
  }
}
