// Merge the per-layer specs in `network-config` into the statuses `talosctl get`
// shows: the highest layer present wins (default < cmdline < platform < operator <
// configuration); specs of that same layer are combined (DNS and NTP servers of
// several DHCP links, in id order). Setting the kernel hostname stays behind an
// injected function; /etc files are network.EtcFileController's.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  type ConfigLayer,
  HostnameSpecType,
  type HostnameSpecSpec,
  HostnameStatusId,
  HostnameStatusType,
  type HostnameStatusSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  ResolverSpecType,
  type ResolverSpecSpec,
  ResolverStatusId,
  ResolverStatusType,
  type ResolverStatusSpec,
  TimeServerSpecType,
  type TimeServerSpecSpec,
  TimeServerStatusId,
  TimeServerStatusType,
  type TimeServerStatusSpec,
  layerRank,
} from "../../resources/catalog/network.js";
import type { Resource } from "../../resources/resource.js";

/** The specs of the highest layer present, sorted by id. */
export function topLayer<S extends { layer: ConfigLayer }>(specs: Resource<S>[]): Resource<S>[] {
  if (specs.length === 0) return [];
  const top = Math.max(...specs.map((r) => layerRank(r.spec.layer)));
  return specs
    .filter((r) => layerRank(r.spec.layer) === top)
    .sort((a, b) => a.metadata.id.localeCompare(b.metadata.id));
}

const unique = (xs: string[]) => [...new Set(xs)];

export class HostnameStatusController implements Controller {
  readonly name = "network.HostnameSpecController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: HostnameSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: HostnameStatusType }];
  private applied = "";

  /** setHostname: applies the hostname to the kernel (node only; never in a sandbox). */
  constructor(private readonly setHostname?: (hostname: string, domainname: string) => Promise<void>) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const top = topLayer(ctx.list<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType))[0];
    if (!top) {
      ctx.destroyOthers(NETWORK_NAMESPACE, HostnameStatusType, new Set());
      return;
    }
    const spec: HostnameStatusSpec = { hostname: top.spec.hostname, domainname: top.spec.domainname };
    if (this.setHostname && this.applied !== `${spec.hostname}.${spec.domainname}`) {
      await this.setHostname(spec.hostname, spec.domainname);
      this.applied = `${spec.hostname}.${spec.domainname}`;
    }
    ctx.modify<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, () => spec);
  }
}

export class ResolverStatusController implements Controller {
  readonly name = "network.ResolverSpecController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: ResolverSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: ResolverStatusType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const top = topLayer(ctx.list<ResolverSpecSpec>(NETWORK_CONFIG_NAMESPACE, ResolverSpecType));
    const dnsServers = unique(top.flatMap((r) => r.spec.dnsServers));
    ctx.modify<ResolverStatusSpec>(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId, () => ({ dnsServers }));
  }
}

export class TimeServerStatusController implements Controller {
  readonly name = "network.TimeServerSpecController";
  readonly inputs = [{ namespace: NETWORK_CONFIG_NAMESPACE, type: TimeServerSpecType, kind: "weak" as const }];
  readonly outputs = [{ type: TimeServerStatusType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const top = topLayer(ctx.list<TimeServerSpecSpec>(NETWORK_CONFIG_NAMESPACE, TimeServerSpecType));
    const timeServers = unique(top.flatMap((r) => r.spec.timeServers));
    ctx.modify<TimeServerStatusSpec>(NETWORK_NAMESPACE, TimeServerStatusType, TimeServerStatusId, () => ({
      timeServers,
    }));
  }
}
