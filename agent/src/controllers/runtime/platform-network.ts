// network.PlatformConfigController: what the platform gave for the network (nocloud's
// meta-data hostname and network-config) as specs of the platform layer in
// `network-config`, ids `platform/<id>` as Talos builds them: links, addresses,
// routes, DHCP operators, resolvers and the hostname. The merge controllers put them
// above the defaults and the kernel command line, below DHCP and the machine config.
// It re-runs as links appear, so a link network-config names by MAC is found once it does.

import { type KnownLink } from "../../network/config-specs.js";
import { type NocloudNetworkConfig, nocloudNetworkSpecs } from "../../network/nocloud-network.js";
import {
  AddressSpecType,
  HostnameSpecType,
  LinkSpecType,
  type LinkSpecSpec,
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  OperatorSpecType,
  ResolverSpecType,
  RouteSpecType,
  addressId,
  routeId,
} from "../../resources/catalog/network.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { Source } from "./source.js";

export interface PlatformNetwork {
  hostname?: { hostname: string; domainname: string };
  /** nocloud's network-config, already checked. */
  nocloud?: NocloudNetworkConfig;
}

export class PlatformConfigController implements Controller {
  readonly name = "network.PlatformConfigController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const }];
  readonly outputs = [AddressSpecType, LinkSpecType, RouteSpecType, OperatorSpecType, HostnameSpecType, ResolverSpecType].map((type) => ({ type, kind: "shared" as const }));

  constructor(private readonly network: Source<PlatformNetwork | undefined>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.network.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const given = this.network.get();
    const links: KnownLink[] = ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType).map((r) => ({ name: r.metadata.id, spec: r.spec }));
    const specs = given?.nocloud ? nocloudNetworkSpecs(given.nocloud, links) : undefined;
    const publish = <S>(type: string, entries: [string, S][]) => {
      const keep = new Set<string>();
      for (const [id, spec] of entries) {
        ctx.modify<S>(NETWORK_CONFIG_NAMESPACE, type, `platform/${id}`, () => spec);
        keep.add(`platform/${id}`);
      }
      ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, type, keep);
    };
    publish(AddressSpecType, (specs?.addresses ?? []).map((a) => [addressId(a.linkName, a.address), a]));
    // network-config may name a link twice (v1 entries): one spec per link, later fields win.
    const linkSpecs = new Map<string, LinkSpecSpec>();
    for (const l of specs?.links ?? []) linkSpecs.set(l.name, { ...linkSpecs.get(l.name), ...l });
    publish(LinkSpecType, [...linkSpecs]);
    publish(RouteSpecType, (specs?.routes ?? []).map((r) => [routeId({ ...r, priority: r.priority ?? 0 }), r]));
    publish(OperatorSpecType, (specs?.operators ?? []).map((o) => [`${o.operator}/${o.linkName}`, o]));
    publish(HostnameSpecType, given?.hostname ? [["hostname", { ...given.hostname, layer: "platform" }]] : []);
    publish(ResolverSpecType, specs && specs.dnsServers.length > 0 ? [["resolvers", { dnsServers: specs.dnsServers, layer: "platform" }]] : []);
  }
}
