// network.OperatorSpecController (DHCPv4 part): with no machine configuration Talos
// runs a DHCPv4 operator on every physical link (ethernet, no kind) that is not
// ignored, once the link is operationally up (LinkUpController brings it up). Each
// lease is applied to the kernel (address, routes, MTU) and its DNS, NTP and
// hostname are published as operator-layer specs in `network-config`
// (ids dhcp4/<link>/resolvers|timeservers|hostname) for the status controllers.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameSpecType,
  type HostnameSpecSpec,
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  ResolverSpecType,
  type ResolverSpecSpec,
  TimeServerSpecType,
  type TimeServerSpecSpec,
} from "../../resources/catalog/network.js";
import type { NetKernel } from "../../sys/net.js";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { Dhcp4Client, type DhcpTransport, type LeaseEvent, type Timers } from "../../network/dhcp4/client.js";
import { DEFAULT_ROUTE_METRIC, leaseToOutput } from "../../network/dhcp4/lease.js";
import { DhcpPort } from "../../network/dhcp4/udp.js";
import { OperatorKernelApplier, type OperatorOutput } from "../../network/operator-output.js";
import { isPhysical } from "./link-status.js";

const log = logger("network-dhcp4-operator");

export interface Dhcp4OperatorOptions {
  kernel: NetKernel;
  /** Per-link DHCP transport; default: one shared UDP port 68 socket. */
  transport?: (linkName: string) => Promise<DhcpTransport>;
  timers?: Timers;
  routeMetric?: number;
  /** Links never touched (kernel argument talos.network.interface.ignore). */
  ignoreLinks?: readonly string[];
  /** Run on exactly these links, whatever their kind (default: every physical link). */
  links?: readonly string[];
  /** Also run on these links (kernel argument ip=<dev>:dhcp). */
  extraLinks?: readonly string[];
  /** Client tuning passed through (tests shorten retransmissions). */
  retransmitInitialMs?: number;
}

interface Running {
  client: Dhcp4Client;
  /** Lease events are handled one at a time per link. */
  chain: Promise<void>;
  output?: OperatorOutput;
}

export class Dhcp4OperatorController implements Controller {
  readonly name = "network.OperatorSpecController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const }];
  readonly outputs = [
    { type: HostnameSpecType, kind: "shared" as const },
    { type: ResolverSpecType, kind: "shared" as const },
    { type: TimeServerSpecType, kind: "shared" as const },
  ];
  private readonly running = new Map<string, Running>();
  private readonly applier: OperatorKernelApplier;
  private readonly transport: (linkName: string) => Promise<DhcpTransport>;
  private ctx: ControllerContext | undefined;
  private stopHooked: AbortSignal | undefined;

  constructor(private readonly opts: Dhcp4OperatorOptions) {
    this.applier = new OperatorKernelApplier(opts.kernel);
    if (opts.transport) {
      this.transport = opts.transport;
    } else {
      const port = new DhcpPort({ kernel: opts.kernel });
      this.transport = (link) => port.transport(link);
    }
  }

  /** Links with a DHCP client running, and their current output (for diagnostics and tests). */
  leases(): Map<string, OperatorOutput | undefined> {
    return new Map([...this.running].map(([k, v]) => [k, v.output]));
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.ctx = ctx;
    if (this.stopHooked !== ctx.signal) {
      this.stopHooked = ctx.signal;
      ctx.signal.addEventListener("abort", () => void this.stopAll(), { once: true });
    }
    const wanted = new Set<string>();
    for (const link of ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)) {
      const name = link.metadata.id;
      const chosen = this.opts.links ? this.opts.links.includes(name) : isPhysical(link.spec) || (this.opts.extraLinks?.includes(name) ?? false);
      if (!chosen || this.opts.ignoreLinks?.includes(name)) continue;
      // network.LinkSpecController brings the link up; DHCP waits for it to be operationally up.
      if (link.spec.operationalState !== "up" && link.spec.operationalState !== "unknown") continue;
      wanted.add(name);
      if (!this.running.has(name)) await this.startClient(name, link.spec.hardwareAddr);
    }
    for (const name of [...this.running.keys()]) {
      if (!wanted.has(name)) await this.stopClient(name, false);
    }
    this.publish(ctx);
  }

  private async startClient(linkName: string, hardwareAddr: string): Promise<void> {
    const transport = await this.transport(linkName);
    const entry: Running = {
      chain: Promise.resolve(),
      client: new Dhcp4Client({
        linkName,
        hardwareAddr,
        transport,
        ...(this.opts.timers ? { timers: this.opts.timers } : {}),
        ...(this.opts.retransmitInitialMs ? { retransmitInitialMs: this.opts.retransmitInitialMs } : {}),
        onEvent: (e) => {
          entry.chain = entry.chain.then(() => this.onLease(linkName, entry, e));
          return entry.chain;
        },
      }),
    };
    this.running.set(linkName, entry);
    log.info("starting DHCPv4", { link: linkName });
    entry.client.start();
  }

  private async stopClient(linkName: string, release: boolean): Promise<void> {
    const entry = this.running.get(linkName);
    if (!entry) return;
    this.running.delete(linkName);
    log.info("stopping DHCPv4", { link: linkName, release });
    await entry.client.stop({ release });
    await entry.chain;
    await this.applier.remove(`dhcp4/${linkName}`);
    entry.output = undefined;
  }

  private async stopAll(): Promise<void> {
    await Promise.all([...this.running.keys()].map((l) => this.stopClient(l, true).catch((err) => log.warn("DHCP stop failed", { error: describeError(err), link: l }))));
  }

  private async onLease(linkName: string, entry: Running, e: LeaseEvent): Promise<void> {
    if (e.type === "bound" || e.type === "renewed") {
      const out = leaseToOutput(linkName, e.lease, { routeMetric: this.opts.routeMetric ?? DEFAULT_ROUTE_METRIC });
      await this.applier.apply(`dhcp4/${linkName}`, linkName, out);
      entry.output = out;
    } else {
      await this.applier.remove(`dhcp4/${linkName}`);
      entry.output = undefined;
    }
    if (this.ctx && !this.ctx.signal.aborted) this.ctx.requeueAfter(0);
  }

  private publish(ctx: ControllerContext): void {
    const keep = { resolvers: new Set<string>(), timeservers: new Set<string>(), hostname: new Set<string>() };
    for (const [link, entry] of this.running) {
      const out = entry.output;
      if (!out) continue;
      if (out.dnsServers.length > 0) {
        const id = `dhcp4/${link}/resolvers`;
        ctx.modify<ResolverSpecSpec>(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, id, () => ({ dnsServers: out.dnsServers, layer: "operator" }));
        keep.resolvers.add(id);
      }
      if (out.timeServers.length > 0) {
        const id = `dhcp4/${link}/timeservers`;
        ctx.modify<TimeServerSpecSpec>(NETWORK_CONFIG_NAMESPACE, TimeServerSpecType, id, () => ({ timeServers: out.timeServers, layer: "operator" }));
        keep.timeservers.add(id);
      }
      if (out.hostname) {
        const id = `dhcp4/${link}/hostname`;
        const h = out.hostname;
        ctx.modify<HostnameSpecSpec>(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, id, () => ({ hostname: h.hostname, domainname: h.domainname, layer: "operator" }));
        keep.hostname.add(id);
      }
    }
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, ResolverSpecType, keep.resolvers);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, TimeServerSpecType, keep.timeservers);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, HostnameSpecType, keep.hostname);
  }
}
