// network.OperatorSpecController (DHCPv4 part): runs a DHCPv4 client for every merged
// dhcp4 OperatorSpec (physical links nothing else configures, `ip=<dev>:dhcp`,
// `dhcp: true` in the machine config), once the link is operationally up. A lease becomes operator-layer specs in `network-config`, ids
// dhcp4/<link>/...: address, routes and MTU for the spec controllers to apply, and
// resolvers, time servers and hostname. It never changes the kernel's addresses or
// routes itself.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AddressSpecType,
  type AddressSpecSpec,
  LinkSpecType,
  type LinkSpecSpec,
  RouteSpecType,
  type RouteSpecSpec,
  HostnameSpecType,
  LinkStatusType,
  type LinkStatusSpec,
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  OperatorSpecType,
  type OperatorSpecSpec,
  ResolverSpecType,
  TimeServerSpecType,
} from "../../resources/catalog/network.js";
import type { NetKernel } from "../../sys/net.js";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { Dhcp4Client, type DhcpTransport, type LeaseEvent, type Timers } from "../../network/dhcp4/client.js";
import { leaseToOutput } from "../../network/dhcp4/lease.js";
import { DhcpPort } from "../../network/dhcp4/udp.js";
import { type OperatorOutput, operatorSpecs } from "../../network/operator-output.js";
import { destroyOtherNames, keptNames, publishOperatorNames } from "./operator-names.js";

const log = logger("network-dhcp4-operator");

export interface Dhcp4OperatorOptions {
  /** Only for the shared UDP port's broadcasts out of a link (see network/dhcp4/udp.ts). */
  kernel: NetKernel;
  /** Per-link DHCP transport; default: one shared UDP port 68 socket. */
  transport?: (linkName: string) => Promise<DhcpTransport>;
  timers?: Timers;
  /** Client tuning passed through (tests shorten retransmissions). */
  retransmitInitialMs?: number;
}

interface Running {
  client: Dhcp4Client;
  /** Lease events are handled one at a time per link. */
  chain: Promise<void>;
  output?: OperatorOutput;
  routeMetric: number;
}

export class Dhcp4OperatorController implements Controller {
  readonly name = "network.OperatorSpecController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: OperatorSpecType, kind: "weak" as const },
  ];
  readonly outputs = [
    { type: AddressSpecType, kind: "shared" as const },
    { type: RouteSpecType, kind: "shared" as const },
    { type: LinkSpecType, kind: "shared" as const },
    { type: HostnameSpecType, kind: "shared" as const },
    { type: ResolverSpecType, kind: "shared" as const },
    { type: TimeServerSpecType, kind: "shared" as const },
  ];
  private readonly running = new Map<string, Running>();
  private readonly transport: (linkName: string) => Promise<DhcpTransport>;
  private ctx: ControllerContext | undefined;
  private stopHooked: AbortSignal | undefined;

  constructor(private readonly opts: Dhcp4OperatorOptions) {
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
    const wanted = new Map<string, number>();
    for (const { spec } of ctx.list<OperatorSpecSpec>(NETWORK_NAMESPACE, OperatorSpecType)) {
      if (spec.operator === "dhcp4") wanted.set(spec.linkName, spec.dhcp4?.routeMetric || 1024);
    }
    const up = new Set<string>();
    for (const link of ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)) {
      const name = link.metadata.id;
      const metric = wanted.get(name);
      // network.LinkSpecController brings the link up; DHCP waits for it to be operationally up.
      if (metric === undefined || (link.spec.operationalState !== "up" && link.spec.operationalState !== "unknown"))
        continue;
      up.add(name);
      const running = this.running.get(name);
      if (running && running.routeMetric !== metric) await this.stopClient(name, false);
      if (!this.running.has(name)) await this.startClient(name, link.spec.hardwareAddr, metric);
    }
    for (const name of [...this.running.keys()]) {
      // A link the config no longer gives to DHCP gives its lease back.
      if (!up.has(name)) await this.stopClient(name, !wanted.has(name));
    }
    this.publish(ctx);
  }

  private async startClient(linkName: string, hardwareAddr: string, routeMetric: number): Promise<void> {
    const transport = await this.transport(linkName);
    const entry: Running = {
      routeMetric,
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
    entry.output = undefined;
  }

  private async stopAll(): Promise<void> {
    await Promise.all(
      [...this.running.keys()].map((l) =>
        this.stopClient(l, true).catch((err) => log.warn("DHCP stop failed", { error: describeError(err), link: l })),
      ),
    );
  }

  private async onLease(linkName: string, entry: Running, e: LeaseEvent): Promise<void> {
    entry.output =
      e.type === "bound" || e.type === "renewed"
        ? leaseToOutput(linkName, e.lease, { routeMetric: entry.routeMetric })
        : undefined;
    if (this.ctx && !this.ctx.signal.aborted) this.ctx.requeueAfter(0);
  }

  private publish(ctx: ControllerContext): void {
    const keep = { ...keptNames(), addresses: new Set<string>(), routes: new Set<string>(), links: new Set<string>() };
    for (const [link, entry] of this.running) {
      const out = entry.output;
      if (!out) continue;
      const specs = operatorSpecs(`dhcp4/${link}`, link, out);
      for (const [id, spec] of specs.addresses) {
        ctx.modify<AddressSpecSpec>(NETWORK_CONFIG_NAMESPACE, AddressSpecType, id, () => spec);
        keep.addresses.add(id);
      }
      for (const [id, spec] of specs.routes) {
        ctx.modify<RouteSpecSpec>(NETWORK_CONFIG_NAMESPACE, RouteSpecType, id, () => spec);
        keep.routes.add(id);
      }
      for (const [id, spec] of specs.links) {
        ctx.modify<LinkSpecSpec>(NETWORK_CONFIG_NAMESPACE, LinkSpecType, id, () => spec);
        keep.links.add(id);
      }
      publishOperatorNames(ctx, `dhcp4/${link}`, out, keep);
    }
    destroyOtherNames(ctx, keep);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, AddressSpecType, keep.addresses);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, RouteSpecType, keep.routes);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, LinkSpecType, keep.links);
  }
}
