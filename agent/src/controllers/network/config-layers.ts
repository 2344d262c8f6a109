// network.AddressConfigController, RouteConfigController, LinkConfigController and
// OperatorConfigController: the `default`, `cmdline` and `configuration` layers of
// addresses, routes, links and DHCPv4/DHCPv6 operators
// (network/config-specs.ts) as specs in `network-config`, ids `<layer>/<id>` as
// Talos builds them. They re-run when the machine config or the set of links changes.

import type { ConfigBundle } from "../../config/bundle.js";
import type { CmdlineNetworking } from "../../network/cmdline.js";
import { type KnownLink, type LayeredSpecs, layeredSpecs } from "../../network/config-specs.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  AddressSpecType,
  type AddressSpecSpec,
  LinkSpecType,
  type LinkSpecSpec,
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  OperatorSpecType,
  type OperatorSpecSpec,
  RouteSpecType,
  type RouteSpecSpec,
  addressId,
  routeId,
} from "../../resources/catalog/network.js";

const configInputs = [
  { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  { namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const },
];

/** The layers as the current config and links give them. */
export function currentLayers(ctx: ControllerContext, cmdline: CmdlineNetworking): LayeredSpecs {
  const network = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()
    ?.machine?.network;
  const links: KnownLink[] = ctx
    .list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)
    .map((r) => ({ name: r.metadata.id, spec: r.spec }));
  return layeredSpecs(network, links, cmdline);
}

export const addressSpecKey = (s: Pick<AddressSpecSpec, "linkName" | "address">): string =>
  addressId(s.linkName, s.address);
export const routeSpecKey = (s: RouteSpecSpec): string =>
  routeId({
    table: s.table,
    family: s.family,
    dst: s.dst,
    gateway: s.gateway,
    priority: s.priority ?? 0,
    outLinkName: s.outLinkName ?? "",
  });

function publish<S>(ctx: ControllerContext, type: string, specs: [string, S][]): void {
  const keep = new Set<string>();
  for (const [id, spec] of specs) {
    ctx.modify<S>(NETWORK_CONFIG_NAMESPACE, type, id, () => spec);
    keep.add(id);
  }
  ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, type, keep);
}

export class AddressConfigController implements Controller {
  readonly name = "network.AddressConfigController";
  readonly inputs = configInputs;
  readonly outputs = [{ type: AddressSpecType, kind: "shared" as const }];
  constructor(private readonly cmdline: CmdlineNetworking) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    publish(
      ctx,
      AddressSpecType,
      currentLayers(ctx, this.cmdline).addresses.map((a) => [`${a.layer}/${addressSpecKey(a)}`, a]),
    );
  }
}

export class RouteConfigController implements Controller {
  readonly name = "network.RouteConfigController";
  readonly inputs = configInputs;
  readonly outputs = [{ type: RouteSpecType, kind: "shared" as const }];
  constructor(private readonly cmdline: CmdlineNetworking) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    publish(
      ctx,
      RouteSpecType,
      currentLayers(ctx, this.cmdline).routes.map((r) => [`${r.layer}/${routeSpecKey(r)}`, r]),
    );
  }
}

export class LinkConfigController implements Controller {
  readonly name = "network.LinkConfigController";
  readonly inputs = configInputs;
  readonly outputs = [{ type: LinkSpecType, kind: "shared" as const }];
  constructor(private readonly cmdline: CmdlineNetworking) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    // Several entries of one layer may name a link (a bond member is also a plain link): merge them.
    const byId = new Map<string, LinkSpecSpec>();
    for (const l of currentLayers(ctx, this.cmdline).links) {
      const id = `${l.layer}/${l.name}`;
      byId.set(id, { ...byId.get(id), ...l });
    }
    publish(ctx, LinkSpecType, [...byId]);
  }
}

export class OperatorConfigController implements Controller {
  readonly name = "network.OperatorConfigController";
  readonly inputs = [
    ...configInputs,
    { namespace: NETWORK_CONFIG_NAMESPACE, type: LinkSpecType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: OperatorSpecType, kind: "shared" as const }];
  constructor(private readonly cmdline: CmdlineNetworking) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    // A link the platform configures (nocloud's network-config) gets no default DHCPv4, as in Talos.
    const platformLinks = new Set(
      ctx
        .list<LinkSpecSpec>(NETWORK_CONFIG_NAMESPACE, LinkSpecType)
        .filter((r) => r.spec.layer === "platform")
        .map((r) => r.spec.name),
    );
    const layers = currentLayers(ctx, this.cmdline);
    const dhcp4 = layers.dhcp4
      .filter((d) => d.layer !== "default" || !platformLinks.has(d.linkName))
      .map((d): [string, OperatorSpecSpec] => [
        `${d.layer}/dhcp4/${d.linkName}`,
        {
          operator: "dhcp4",
          linkName: d.linkName,
          requireUp: true,
          dhcp4: { routeMetric: d.routeMetric },
          layer: d.layer,
        },
      ]);
    const dhcp6 = layers.dhcp6.map((d): [string, OperatorSpecSpec] => [
      `${d.layer}/dhcp6/${d.linkName}`,
      {
        operator: "dhcp6",
        linkName: d.linkName,
        requireUp: true,
        dhcp6: { ...(d.duid ? { DUID: d.duid } : {}), routeMetric: d.routeMetric },
        layer: d.layer,
      },
    ]);
    publish(ctx, OperatorSpecType, [...dhcp4, ...dhcp6]);
  }
}

/**
 * network.OperatorVIPConfigController: a `vip` OperatorSpec for every layer 2 `vip.ip`
 * (interfaces and their vlans), gratuitous ARP on, as Talos builds them. Nothing runs
 * the VIP operator yet: Talos campaigns for the address in etcd, which this node does
 * not run, and without etcd Talos never takes the address either.
 */
export class OperatorVipConfigController implements Controller {
  readonly name = "network.OperatorVIPConfigController";
  readonly inputs = configInputs;
  readonly outputs = [{ type: OperatorSpecType, kind: "shared" as const }];
  constructor(private readonly cmdline: CmdlineNetworking) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const specs = currentLayers(ctx, this.cmdline).vips.map((v): [string, OperatorSpecSpec] => [
      `configuration/vip/${v.linkName}`,
      {
        operator: "vip",
        linkName: v.linkName,
        requireUp: true,
        vip: { ip: v.ip, gratuitousARP: true },
        layer: "configuration",
      },
    ]);
    publish(ctx, OperatorSpecType, specs);
  }
}
