// network.LinkSpecController: makes the kernel's links match the merged LinkSpecs:
// logical links (vlan, bond, bridge, dummy) are created, and deleted when their spec
// goes; a bond's or bridge's settings are changed in place, a link of another kind or
// VLAN re-created; members join and leave their bond or bridge (down while joining a
// bond, as the kernel requires); MTU is set when specified; links are brought up.
// Links without a spec (ignored ones included) are never touched. Nothing happens before
// the devices are ready: the kernel refuses to rename a link that is up.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  type BondMasterSpec,
  LinkSpecType,
  type LinkSpecSpec,
  NETWORK_NAMESPACE,
  VLAN_PROTOCOLS,
  bondNumbers,
} from "../../resources/catalog/network.js";
import { describeError } from "../../errors.js";
import {
  type BondOptions,
  IFF_UP,
  type KernelLink,
  type LinkCreateRequest,
  type LinkSettingsRequest,
  type NetKernel,
} from "../../sys/net.js";
import { bondOptionsDiffering } from "./bond-settings.js";
import { KernelTrigger } from "./kernel-watch.js";
import type { NetworkChangeHold } from "./change-hold.js";
import { withBondDefaults } from "../../network/bond-defaults.js";
import { devicesReady, devicesStatusInput } from "../runtime/devices-status.js";

/** Every option of a bond spec in the kernel's numbers; which of them reach the kernel is the encoder's choice by mode. */
export function bondOptions(b: BondMasterSpec, primaryName: string | undefined): BondOptions {
  return { ...bondNumbers(b), ...(primaryName ? { primary: primaryName } : {}) };
}

// A bond spec without options (no source of ours makes one) gets what Talos fills in: the kernel refuses lp_interval 0.
const defaultBond = withBondDefaults({
  mode: "balance-rr",
  xmitHashPolicy: "layer2",
  lacpRate: "slow",
  arpValidate: "none",
  arpAllTargets: "any",
  primaryReselect: "always",
  failOverMac: "none",
});

export function createRequest(s: LinkSpecSpec, byIndex: Map<number, string>): LinkCreateRequest | undefined {
  switch (s.kind) {
    case "dummy":
      return { kind: "dummy", name: s.name };
    case "vlan":
      if (!s.parentName || !s.vlan) return undefined;
      return {
        kind: "vlan",
        name: s.name,
        parentName: s.parentName,
        vlanId: s.vlan.vlanID,
        protocol: VLAN_PROTOCOLS[s.vlan.vlanProtocol] ?? 0x8100,
      };
    case "bond":
      return {
        kind: "bond",
        name: s.name,
        bond: bondOptions(
          s.bondMaster ?? defaultBond,
          s.bondMaster?.primary ? byIndex.get(s.bondMaster.primary) : undefined,
        ),
      };
    case "bridge":
      return { kind: "bridge", name: s.name, bridge: { stp: s.bridgeMaster?.stp?.enabled ?? false } };
    default:
      return undefined;
  }
}

/** Whether an existing logical link must be re-created to match its spec (a kind or a VLAN cannot change in place). */
function mismatched(s: LinkSpecSpec, l: KernelLink): boolean {
  if (l.kind !== s.kind) return true;
  return (
    s.kind === "vlan" &&
    s.vlan !== undefined &&
    (l.vlanId !== s.vlan.vlanID || l.vlanProtocol !== (VLAN_PROTOCOLS[s.vlan.vlanProtocol] ?? 0x8100))
  );
}

/** What differs between a bond's or bridge's settings in the kernel and its request (names of options); empty when none. */
function settingsDiffering(req: LinkSettingsRequest, l: KernelLink, links: readonly KernelLink[]): string[] {
  if (req.kind === "bridge") return l.bridge && l.bridge.stp !== (req.bridge.stp ?? false) ? ["stp"] : [];
  if (!l.bond) return [];
  const members = links.filter((k) => k.masterIndex === l.index).map((k) => k.name);
  return bondOptionsDiffering(req.bond, l.bond, members);
}

export class LinkSpecController implements Controller {
  readonly name = "network.LinkSpecController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: LinkSpecType, kind: "weak" as const }, devicesStatusInput];
  readonly outputs = [];
  private readonly trigger: KernelTrigger;
  /** The specs applied last round: a logical link whose spec goes is deleted, a member whose master goes is freed. */
  private previous = new Map<string, LinkSpecSpec>();
  /**
   * The settings last sent in place to each bond or bridge. Settings the kernel still holds
   * differently afterwards (it refused or adjusted them) are not sent again until the spec
   * changes: each attempt takes the link down and frees its members.
   */
  private readonly settingsSent = new Map<string, string>();

  constructor(
    private readonly kernel: NetKernel,
    private readonly hold?: NetworkChangeHold,
  ) {
    this.trigger = new KernelTrigger(kernel, ["link"]);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!devicesReady(ctx)) return;
    this.trigger.arm(ctx);
    await this.hold?.released();
    const specs = new Map(
      ctx.list<LinkSpecSpec>(NETWORK_NAMESPACE, LinkSpecType).map((r) => [r.spec.name, r.spec] as const),
    );
    let links = await this.kernel.listLinks();
    const find = (name: string) => links.find((l) => l.name === name);

    for (const [name, prev] of this.previous) {
      if (specs.has(name)) continue;
      const l = find(name);
      if (!l) continue;
      if (prev.logical) {
        ctx.log.info("deleting link", { link: name, kind: prev.kind });
        await this.kernel.deleteLink(name);
        this.settingsSent.delete(name);
      } else if ((prev.masterName || prev.bridgeSlave) && l.masterIndex) {
        await this.kernel.setLinkMaster(name, undefined);
      }
    }
    links = await this.kernel.listLinks();

    // Masters before members, parents before vlans: logical links in an order that lets each find what it needs.
    const order = [...specs.values()].sort((a, b) => rank(a) - rank(b));
    for (const s of order) {
      let l = find(s.name);
      const req = s.logical ? createRequest(s, new Map(links.map((k) => [k.index, k.name]))) : undefined;
      if (s.logical && l && mismatched(s, l)) {
        ctx.log.info("replacing link", { link: s.name, oldKind: l.kind, kind: s.kind });
        await this.kernel.deleteLink(s.name);
        this.settingsSent.delete(s.name);
        links = await this.kernel.listLinks();
        l = undefined;
      }
      if (!l && req) {
        if (req.kind === "vlan" && !find(req.parentName)) continue;
        ctx.log.info("creating link", { link: s.name, kind: s.kind });
        await this.kernel.createLink(req);
        links = await this.kernel.listLinks();
        l = find(s.name);
      }
      if (!l) continue;
      if (req?.kind === "bond" || req?.kind === "bridge") {
        links = await this.syncSettings(ctx, req, l, links);
        l = find(s.name)!;
      }
      const master = s.masterName ?? s.bridgeSlave?.masterName;
      const currentMaster = l.masterIndex ? links.find((k) => k.index === l!.masterIndex)?.name : undefined;
      if (master !== currentMaster && (master === undefined || find(master))) {
        // A bond takes only members that are down.
        if (master && find(master)?.kind === "bond" && (l.flags & IFF_UP) !== 0)
          await this.kernel.setLinkUp(s.name, false);
        await this.kernel.setLinkMaster(s.name, master);
        links = await this.kernel.listLinks();
        l = find(s.name)!;
      }
      if (s.mtu > 0 && l.mtu !== s.mtu) await this.kernel.setLinkMtu(s.name, s.mtu);
      if (s.up && (l.flags & IFF_UP) === 0) {
        ctx.log.info("bringing link up", { link: s.name });
        await this.kernel.setLinkUp(s.name, true);
      }
    }
    this.previous = specs;
  }

  /**
   * Changes a bond's or bridge's settings in place, as Talos does: down first and its members
   * freed (the kernel takes a bond's mode and several options only then); the members rejoin
   * and the link comes back up later in the same round. Returns the links as they are after.
   */
  private async syncSettings(
    ctx: ControllerContext,
    req: LinkSettingsRequest,
    l: KernelLink,
    links: KernelLink[],
  ): Promise<KernelLink[]> {
    const differing = settingsDiffering(req, l, links);
    if (differing.length === 0) {
      this.settingsSent.delete(req.name);
      return links;
    }
    const key = JSON.stringify(req);
    if (this.settingsSent.get(req.name) === key) return links;
    this.settingsSent.set(req.name, key);
    ctx.log.info("updating link settings", { link: req.name, kind: req.kind, options: differing });
    if ((l.flags & IFF_UP) !== 0) await this.kernel.setLinkUp(req.name, false);
    for (const member of links.filter((k) => k.masterIndex === l.index))
      await this.kernel.setLinkMaster(member.name, undefined);
    try {
      await this.kernel.setLinkSettings(req);
    } catch (err) {
      // The link keeps its old settings and comes back with its members; the next spec may be taken.
      ctx.log.warn("link settings refused", { link: req.name, options: differing, error: describeError(err) });
    }
    return this.kernel.listLinks();
  }
}
function rank(s: LinkSpecSpec): number {
  if (s.kind === "bond" || s.kind === "bridge") return 0;
  if (s.kind === "vlan") return 2;
  return 1;
}
