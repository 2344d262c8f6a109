// network.LinkStatusController: one LinkStatus per kernel link (id = link name), once the
// devices are ready: before that udev may still rename links, and nothing (DHCP, the config's
// device selectors) may start from a name that is about to change.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_NAMESPACE,
  VLAN_PROTOCOLS,
  bondMasterSpec,
  netNames,
} from "../../resources/catalog/network.js";
import type { KernelLink, NetKernel } from "../../sys/net.js";
import { KernelTrigger } from "./kernel-watch.js";
import { devicesReady, devicesStatusInput } from "../runtime/devices-status.js";

/** Talos's notion of a physical link: a plain ethernet device. */
export function isPhysical(spec: Pick<LinkStatusSpec, "type" | "kind">): boolean {
  return spec.type === "ether" && spec.kind === "";
}

/** Facts the kernel's link list does not carry (sysfs/ethtool); optional. */
export interface LinkDetails {
  busPath?: string;
  driver?: string;
  pciID?: string;
  speedMbit?: number;
  duplex?: number;
}

export type LinkDetailsReader = (link: KernelLink) => Promise<LinkDetails>;

/** links: every kernel link, to name a bond's primary member by its index. */
export function linkStatusSpec(
  link: KernelLink,
  details: LinkDetails = {},
  links: readonly KernelLink[] = [],
): LinkStatusSpec {
  const spec: LinkStatusSpec = {
    index: link.index,
    type: netNames.linkType(link.type),
    linkIndex: link.linkIndex,
    flags: netNames.linkFlags(link.flags),
    hardwareAddr: link.hardwareAddr,
    permanentAddr: link.permanentAddr,
    broadcastAddr: link.broadcastAddr,
    mtu: link.mtu,
    queueDisc: link.queueDisc,
    ...(link.masterIndex ? { masterIndex: link.masterIndex } : {}),
    operationalState: netNames.operState(link.operState),
    kind: link.kind,
    slaveKind: link.slaveKind,
    linkState: link.carrier,
    port: netNames.port(255),
    duplex: netNames.duplex(details.duplex ?? 255),
  };
  const vlanProtocol = Object.entries(VLAN_PROTOCOLS).find(([, v]) => v === link.vlanProtocol)?.[0];
  if (link.kind === "vlan" && vlanProtocol) spec.vlan = { vlanID: link.vlanId, vlanProtocol };
  // Go's omitempty leaves out a zero struct: a bridge without STP shows no bridgeMaster.
  if (link.bridge?.stp) spec.bridgeMaster = { stp: { enabled: true } };
  if (link.bond)
    spec.bondMaster = bondMasterSpec(link.bond, links.find((l) => l.name === link.bond!.primary)?.index ?? 0);
  // Keep Talos's key order: optional keys are inserted where its struct has them.
  const ordered: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) {
    if (k === "linkState") {
      if (details.busPath) ordered.busPath = details.busPath;
      if (details.pciID) ordered.pciID = details.pciID;
      if (details.driver) ordered.driver = details.driver;
    }
    ordered[k] = v;
    if (k === "linkState" && details.speedMbit) ordered.speedMbit = details.speedMbit;
  }
  return ordered as unknown as LinkStatusSpec;
}

export class LinkStatusController implements Controller {
  readonly name = "network.LinkStatusController";
  readonly inputs = [devicesStatusInput];
  readonly outputs = [{ type: LinkStatusType }];
  private readonly trigger: KernelTrigger;

  constructor(
    private readonly kernel: NetKernel,
    private readonly details?: LinkDetailsReader,
  ) {
    this.trigger = new KernelTrigger(kernel, ["link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!devicesReady(ctx)) return;
    this.trigger.arm(ctx);
    const links = await this.kernel.listLinks();
    const keep = new Set<string>();
    for (const link of links) {
      const details = this.details ? await this.details(link).catch(() => ({})) : {};
      const spec = linkStatusSpec(link, details, links);
      ctx.modify<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType, link.name, () => spec);
      keep.add(link.name);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, LinkStatusType, keep);
  }
}
