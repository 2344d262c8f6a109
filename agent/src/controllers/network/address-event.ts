// network.AddressEventController: a machine.AddressEvent (hostname and the current node
// addresses, without prefix lengths) on the Events stream whenever either changes, and
// every ten minutes, as Talos sends them.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  type HostnameStatusSpec,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";

export interface AddressEvent {
  hostname: string;
  addresses: string[];
}

const REPEAT_MS = 10 * 60_000;

export class AddressEventController implements Controller {
  readonly name = "network.AddressEventController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.current, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, id: HostnameStatusId, kind: "weak" as const },
  ];
  readonly outputs = [];

  constructor(private readonly publish: (event: AddressEvent) => void) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const current =
      ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.current)?.spec.addresses ?? [];
    const hostname =
      ctx.get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec.hostname ?? "";
    this.publish({ hostname, addresses: current.map((p) => p.slice(0, p.lastIndexOf("/"))) });
    ctx.requeueAfter(REPEAT_MS);
  }
}
