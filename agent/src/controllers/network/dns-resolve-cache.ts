// network.DNSResolveCacheController: runs the host DNS cache on every address
// HostDNSConfig lists, over UDP and TCP, forwarding to the resolvers ResolverStatus
// lists, and publishes one DNSResolveCache per running listener
// (`udp-127.0.0.53:53`, status "running"). Disabled: listeners closed, none published.
// A listener that cannot bind (an address not on any link yet) is tried again later.

import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { HostDnsResolver, listenTcp, listenUdp, type DnsListener } from "../../network/hostdns/server.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  DNSResolveCacheType,
  type DNSResolveCacheSpec,
  HostDNSConfigId,
  HostDNSConfigType,
  type HostDNSConfigSpec,
} from "../../resources/catalog/hostdns.js";
import {
  NETWORK_NAMESPACE,
  ResolverStatusId,
  ResolverStatusType,
  type ResolverStatusSpec,
} from "../../resources/catalog/network.js";

const log = logger("network-dns-resolve-cache");
const BIND_RETRY_MS = 5000;

export class DNSResolveCacheController implements Controller {
  readonly name = "network.DNSResolveCacheController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: HostDNSConfigType, id: HostDNSConfigId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: ResolverStatusType, id: ResolverStatusId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: DNSResolveCacheType }];
  readonly resolver: HostDnsResolver;
  private readonly listeners = new Map<string, DnsListener>();
  /** Listeners whose bind failure was already reported (retries stay quiet until one succeeds). */
  private readonly reported = new Set<string>();
  private stopHooked: AbortSignal | undefined;

  constructor(resolver?: HostDnsResolver) {
    this.resolver = resolver ?? new HostDnsResolver();
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (this.stopHooked !== ctx.signal) {
      this.stopHooked = ctx.signal;
      ctx.signal.addEventListener("abort", () => void this.closeAll([...this.listeners.keys()]), { once: true });
    }
    const cfg = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
    if (!cfg) return;
    if (!cfg.enabled) {
      await this.closeAll([...this.listeners.keys()]);
      ctx.destroyOthers(NETWORK_NAMESPACE, DNSResolveCacheType, new Set());
      return;
    }
    const listen = cfg.listenAddresses ?? [];
    // Our own listeners are never upstreams (a resolv.conf naming the cache would loop).
    const own = new Set(listen.map((a) => a.replace(/^\[?([^\]]+?)\]?:53$/, "$1")));
    const upstreams = (
      ctx.get<ResolverStatusSpec>(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.spec.dnsServers ?? []
    ).filter((s) => !own.has(s));
    if (this.resolver.setUpstreams(upstreams)) log.info("updated dns server nameservers", { addrs: upstreams });

    const wanted = new Set(listen.flatMap((a) => [`udp-${a}`, `tcp-${a}`]));
    await this.closeAll([...this.listeners.keys()].filter((id) => !wanted.has(id)));
    const running = new Set<string>();
    let failed = false;
    for (const id of wanted) {
      if (!this.listeners.has(id)) {
        const address = id.slice(4);
        try {
          this.listeners.set(
            id,
            await (id.startsWith("udp-") ? listenUdp(address, this.resolver) : listenTcp(address, this.resolver)),
          );
          log.info("dns server listening", { listener: id });
          this.reported.delete(id);
        } catch (err) {
          if (!this.reported.has(id))
            log.warn("dns server not started, retrying every 5 s", { listener: id, error: describeError(err) });
          this.reported.add(id);
          failed = true;
          continue;
        }
      }
      ctx.modify<DNSResolveCacheSpec>(NETWORK_NAMESPACE, DNSResolveCacheType, id, () => ({ status: "running" }));
      running.add(id);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, DNSResolveCacheType, running);
    if (failed) ctx.requeueAfter(BIND_RETRY_MS);
  }

  private async closeAll(ids: string[]): Promise<void> {
    for (const id of ids) {
      const l = this.listeners.get(id);
      this.listeners.delete(id);
      await l
        ?.close()
        .catch((err: unknown) => log.warn("dns server close failed", { listener: id, error: describeError(err) }));
    }
  }
}
