// The network settings the platform gave (nocloud's meta-data hostname, network-config's DNS
// servers) as specs of the platform layer: the status controllers merge them below DHCP and
// the machine configuration, as Talos's platform layer.

import { HostnameSpecType, NETWORK_CONFIG_NAMESPACE, ResolverSpecType, type HostnameSpecSpec, type ResolverSpecSpec } from "../../resources/catalog/network.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { Source } from "./source.js";

export interface PlatformNetwork {
  hostname?: { hostname: string; domainname: string };
  dnsServers: string[];
}

export class PlatformHostnameController implements Controller {
  readonly name = "network.PlatformHostnameController";
  readonly inputs = [];
  readonly outputs = [{ type: HostnameSpecType, kind: "shared" as const }];

  constructor(private readonly network: Source<PlatformNetwork | undefined>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.network.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const h = this.network.get()?.hostname;
    if (h) ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, "platform/hostname", () => ({ ...h, layer: "platform" }));
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, new Set(h ? ["platform/hostname"] : []));
  }
}

export class PlatformResolversController implements Controller {
  readonly name = "network.PlatformResolversController";
  readonly inputs = [];
  readonly outputs = [{ type: ResolverSpecType, kind: "shared" as const }];

  constructor(private readonly network: Source<PlatformNetwork | undefined>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.network.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const dnsServers = this.network.get()?.dnsServers ?? [];
    if (dnsServers.length > 0) ctx.modify<ResolverSpecSpec>(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, "platform/resolvers", () => ({ dnsServers, layer: "platform" }));
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, new Set(dnsServers.length > 0 ? ["platform/resolvers"] : []));
  }
}
