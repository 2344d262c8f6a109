// network.AddressStatusController: one AddressStatus per kernel address
// (id = <link>/<address>/<prefix length>).

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AddressStatusType,
  type AddressStatusSpec,
  NETWORK_NAMESPACE,
  addressId,
  netNames,
} from "../../resources/catalog/network.js";
import type { KernelAddress, NetKernel } from "../../sys/net.js";
import { KernelTrigger } from "./kernel-watch.js";

export function addressStatusSpec(a: KernelAddress): AddressStatusSpec {
  const spec: AddressStatusSpec = {
    address: `${a.address}/${a.prefixLen}`,
    linkIndex: a.linkIndex,
    linkName: a.linkName,
    family: netNames.family(a.family),
    scope: netNames.scope(a.scope),
    flags: netNames.addressFlags(a.flags),
  };
  // Go omitempty: only present values, in Talos's key order.
  const ordered: Record<string, unknown> = { address: spec.address };
  if (a.local) ordered.local = a.local;
  if (a.broadcast) ordered.broadcast = a.broadcast;
  return { ...ordered, ...spec } as AddressStatusSpec;
}

export const ADDRESS_STATUS_CONTROLLER = "network.AddressStatusController";

export class AddressStatusController implements Controller {
  readonly name = ADDRESS_STATUS_CONTROLLER;
  readonly inputs = [];
  // Shared: the platform's external addresses are AddressStatuses too (network.PlatformConfigController).
  readonly outputs = [{ type: AddressStatusType, kind: "shared" as const }];
  private readonly trigger: KernelTrigger;

  constructor(private readonly kernel: NetKernel) {
    this.trigger = new KernelTrigger(kernel, ["address", "link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.trigger.arm(ctx);
    const keep = new Set<string>();
    for (const a of await this.kernel.listAddresses()) {
      const spec = addressStatusSpec(a);
      const id = addressId(a.linkName, spec.address);
      ctx.modify<AddressStatusSpec>(NETWORK_NAMESPACE, AddressStatusType, id, () => spec);
      keep.add(id);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, AddressStatusType, keep);
  }
}
