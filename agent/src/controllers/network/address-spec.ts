// network.AddressSpecController: makes the kernel hold the merged AddressSpecs. An
// address it added that is no longer specified is removed; a specified address
// missing from the kernel (deleted behind our back) is added again on the next
// kernel notification. Links absent from the kernel wait until they appear. An
// address with announceWithARP (a VIP taken over) is announced by gratuitous ARP
// each time it is added, as Talos does.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AddressSpecType,
  type AddressSpecSpec,
  NETWORK_NAMESPACE,
  netValues,
} from "../../resources/catalog/network.js";
import type { AddressRequest, NetKernel } from "../../sys/net.js";
import { describeError } from "../../errors.js";
import { KernelTrigger } from "./kernel-watch.js";
import type { NetworkChangeHold } from "./change-hold.js";

export function addressRequest(s: AddressSpecSpec): AddressRequest {
  const [address, len] = s.address.split("/") as [string, string];
  const req: AddressRequest = {
    linkName: s.linkName,
    address,
    prefixLen: Number(len),
    scope: netValues.scope(s.scope),
  };
  // IFA_F_PERMANENT is the kernel's own marking of an address without lifetimes; the rest are requests.
  const flags = netValues.addressFlags(s.flags) & ~0x80;
  if (flags) req.flags = flags;
  if (s.family === "inet4") req.broadcast = "+";
  return req;
}

const key = (a: { linkName: string; address: string; prefixLen: number }) =>
  `${a.linkName}/${a.address}/${a.prefixLen}`;

export class AddressSpecController implements Controller {
  readonly name = "network.AddressSpecController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: AddressSpecType, kind: "weak" as const }];
  readonly outputs = [];
  private readonly trigger: KernelTrigger;
  /** What this controller added, by key: removed from the kernel when its spec goes. */
  private readonly applied = new Map<string, AddressRequest>();

  constructor(
    private readonly kernel: NetKernel,
    private readonly hold?: NetworkChangeHold,
  ) {
    this.trigger = new KernelTrigger(kernel, ["address", "link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.trigger.arm(ctx);
    await this.hold?.released();
    const links = new Set((await this.kernel.listLinks()).map((l) => l.name));
    const present = new Set((await this.kernel.listAddresses()).map((a) => key(a)));
    const wanted = new Map<string, AddressRequest>();
    const announced = new Set<string>();
    for (const r of ctx.list<AddressSpecSpec>(NETWORK_NAMESPACE, AddressSpecType)) {
      const req = addressRequest(r.spec);
      wanted.set(key(req), req);
      if (r.spec.announceWithARP) announced.add(key(req));
    }
    for (const [k, req] of this.applied) {
      if (wanted.has(k)) continue;
      if (links.has(req.linkName) && present.has(k)) {
        ctx.log.info("removing address", { link: req.linkName, address: `${req.address}/${req.prefixLen}` });
        await this.kernel.removeAddress(req);
      }
      this.applied.delete(k);
    }
    for (const [k, req] of wanted) {
      if (!links.has(req.linkName)) continue;
      if (!present.has(k)) {
        ctx.log.info("adding address", { link: req.linkName, address: `${req.address}/${req.prefixLen}` });
        await this.kernel.addAddress(req);
        if (announced.has(k)) {
          await this.kernel.announceAddress(req.linkName, req.address).catch((err: unknown) =>
            ctx.log.warn("failure sending gratuitous ARP", {
              link: req.linkName,
              address: req.address,
              error: describeError(err),
            }),
          );
        }
      }
      this.applied.set(k, req);
    }
  }
}
