// The name specs a DHCP lease (v4 or v6) puts on the operator layer: resolvers, time
// servers and hostname, ids `<prefix>/resolvers|timeservers|hostname`. Each operator
// controller publishes them for its running leases and destroys the ones not kept.

import type { ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameSpecType,
  type HostnameSpecSpec,
  NETWORK_CONFIG_NAMESPACE,
  ResolverSpecType,
  type ResolverSpecSpec,
  TimeServerSpecType,
  type TimeServerSpecSpec,
} from "../../resources/catalog/network.js";
import type { OperatorOutput } from "../../network/operator-output.js";

/** The ids of the name specs published in one reconcile, by type. */
export interface KeptNames {
  resolvers: Set<string>;
  timeservers: Set<string>;
  hostname: Set<string>;
}

export const keptNames = (): KeptNames => ({ resolvers: new Set(), timeservers: new Set(), hostname: new Set() });

/** Publishes the lease's names under `prefix` (e.g. "dhcp4/eth0") and records their ids in `keep`. */
export function publishOperatorNames(
  ctx: ControllerContext,
  prefix: string,
  out: OperatorOutput,
  keep: KeptNames,
): void {
  if (out.dnsServers.length > 0) {
    const id = `${prefix}/resolvers`;
    ctx.modify<ResolverSpecSpec>(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, id, () => ({
      dnsServers: out.dnsServers,
      layer: "operator",
    }));
    keep.resolvers.add(id);
  }
  if (out.timeServers.length > 0) {
    const id = `${prefix}/timeservers`;
    ctx.modify<TimeServerSpecSpec>(NETWORK_CONFIG_NAMESPACE, TimeServerSpecType, id, () => ({
      timeServers: out.timeServers,
      layer: "operator",
    }));
    keep.timeservers.add(id);
  }
  if (out.hostname) {
    const id = `${prefix}/hostname`;
    const h = out.hostname;
    ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, id, () => ({
      hostname: h.hostname,
      domainname: h.domainname,
      layer: "operator",
    }));
    keep.hostname.add(id);
  }
}

/** Destroys the operator's name specs not published this time. */
export function destroyOtherNames(ctx: ControllerContext, keep: KeptNames): void {
  ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, keep.resolvers);
  ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, TimeServerSpecType, keep.timeservers);
  ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, keep.hostname);
}
