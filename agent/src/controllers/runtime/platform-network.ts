// network.PlatformConfigController: what the platform gave for the network (nocloud's
// meta-data hostname and network-config, a cloud's metadata) as specs of the platform layer in
// `network-config`, ids `platform/<id>` as Talos builds them: links, addresses,
// routes, DHCP operators, resolvers, time servers and the hostname. The merge controllers put them
// above the defaults and the kernel command line, below DHCP and the machine config. A cloud's
// external addresses become AddressStatuses of the link "external", as in Talos.
// It re-runs as links appear, so a link network-config names by MAC is found once it does.
// As Talos, what the platform gave is kept on STATE (platform-network.yaml) once STATE is
// mounted, and a boot whose platform gives nothing (its source unreachable) uses that copy.

import { type KnownLink } from "../../network/config-specs.js";
import { type NocloudNetworkConfig, nocloudNetworkSpecs } from "../../network/nocloud-network.js";
import { type PlatformNetworkConfig, withLinksByMac } from "../../network/platform-config.js";
import {
  AddressSpecType,
  AddressStatusType,
  type AddressStatusSpec,
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
  TimeServerSpecType,
  addressId,
  routeId,
} from "../../resources/catalog/network.js";
import { isIP } from "node:net";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { describeError } from "../../errors.js";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import type { Source } from "./source.js";

export interface PlatformNetwork {
  hostname?: { hostname: string; domainname: string };
  /** nocloud's network-config, already checked. */
  nocloud?: NocloudNetworkConfig;
  /** A cloud's network, already in specs (links it names by MAC follow the node's link with that MAC). */
  config?: PlatformNetworkConfig;
}

/** The link Talos files a cloud's external addresses under. */
export const EXTERNAL_LINK = "external";

function externalAddress(ip: string): AddressStatusSpec {
  const v6 = isIP(ip) === 6;
  return {
    address: `${ip}/${v6 ? 128 : 32}`,
    linkIndex: 0,
    linkName: EXTERNAL_LINK,
    family: v6 ? "inet6" : "inet4",
    scope: "global",
    flags: "",
  };
}

/** Talos's platform-network.yaml on STATE. */
export interface PlatformNetworkCache {
  /** STATE is always there (the sandbox's state directory, as Talos in a container): no mount to wait for. */
  alwaysMounted: boolean;
  /** The file's text; undefined when there is none. */
  read(): Promise<string | undefined>;
  write(text: string): Promise<void>;
}

export class PlatformConfigController implements Controller {
  readonly name = "network.PlatformConfigController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: MountStatusType, kind: "weak" as const },
  ];
  readonly outputs = [
    AddressSpecType,
    LinkSpecType,
    RouteSpecType,
    OperatorSpecType,
    HostnameSpecType,
    ResolverSpecType,
    TimeServerSpecType,
    AddressStatusType,
  ].map((type) => ({
    type,
    kind: "shared" as const,
  }));
  /** The copy read from STATE (once), or last written there. */
  private cached: PlatformNetwork | undefined;
  private cacheRead = false;
  private cachedText: string | undefined;

  constructor(
    private readonly network: Source<PlatformNetwork | undefined>,
    private readonly cache?: PlatformNetworkCache,
  ) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.network.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const live = this.network.get();
    if (this.cache && (this.cache.alwaysMounted || ctx.get(RUNTIME_NAMESPACE, MountStatusType, "STATE")))
      await this.syncCache(ctx, this.cache, live);
    // The live network always wins; the copy is the last resort.
    const given = live ?? this.cached;
    const links: KnownLink[] = ctx
      .list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)
      .map((r) => ({ name: r.metadata.id, spec: r.spec }));
    const nocloud = given?.nocloud ? nocloudNetworkSpecs(given.nocloud, links) : undefined;
    const cloud = given?.config ? withLinksByMac(given.config, links) : undefined;
    const publish = <S>(type: string, entries: [string, S][]) => {
      const keep = new Set<string>();
      for (const [id, spec] of entries) {
        ctx.modify<S>(NETWORK_CONFIG_NAMESPACE, type, `platform/${id}`, () => spec);
        keep.add(`platform/${id}`);
      }
      ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, type, keep);
    };
    const addresses = [...(nocloud?.addresses ?? []), ...(cloud?.addresses ?? [])];
    publish(
      AddressSpecType,
      addresses.map((a) => [addressId(a.linkName, a.address), a]),
    );
    // network-config may name a link twice (v1 entries): one spec per link, later fields win.
    const linkSpecs = new Map<string, LinkSpecSpec>();
    for (const l of [...(nocloud?.links ?? []), ...(cloud?.links ?? [])])
      linkSpecs.set(l.name, { ...linkSpecs.get(l.name), ...l });
    publish(LinkSpecType, [...linkSpecs]);
    publish(
      RouteSpecType,
      [...(nocloud?.routes ?? []), ...(cloud?.routes ?? [])].map((r) => [
        routeId({ ...r, priority: r.priority ?? 0 }),
        r,
      ]),
    );
    publish(
      OperatorSpecType,
      [...(nocloud?.operators ?? []), ...(cloud?.operators ?? [])].map((o) => [`${o.operator}/${o.linkName}`, o]),
    );
    const hostname = given?.hostname ? { ...given.hostname, layer: "platform" as const } : cloud?.hostnames[0];
    publish(HostnameSpecType, hostname ? [["hostname", hostname]] : []);
    const dnsServers = nocloud?.dnsServers.length ? nocloud.dnsServers : (cloud?.resolvers[0]?.dnsServers ?? []);
    publish(ResolverSpecType, dnsServers.length > 0 ? [["resolvers", { dnsServers, layer: "platform" }]] : []);
    const ntp = cloud?.timeServers[0];
    publish(TimeServerSpecType, ntp && ntp.timeServers.length > 0 ? [["timeservers", ntp]] : []);
    const keepExternal = new Set<string>();
    for (const ip of cloud?.externalIPs ?? []) {
      const spec = externalAddress(ip);
      const id = addressId(EXTERNAL_LINK, spec.address);
      ctx.modify<AddressStatusSpec>(NETWORK_NAMESPACE, AddressStatusType, id, () => spec);
      keepExternal.add(id);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, AddressStatusType, keepExternal);
  }

  private async syncCache(
    ctx: ControllerContext,
    cache: PlatformNetworkCache,
    live: PlatformNetwork | undefined,
  ): Promise<void> {
    if (!this.cacheRead) {
      this.cacheRead = true;
      try {
        this.cachedText = await cache.read();
        // Written by this controller from a PlatformNetwork.
        this.cached = this.cachedText === undefined ? undefined : (parseYaml(this.cachedText) as PlatformNetwork);
      } catch (err) {
        ctx.log.warn("ignored failure loading cached platform network config", { error: describeError(err) });
      }
    }
    if (live === undefined) return;
    const text = toYaml(live);
    // An unchanged copy is not written again.
    if (text !== this.cachedText) {
      await cache.write(text);
      this.cachedText = text;
    }
    this.cached = live;
  }
}
