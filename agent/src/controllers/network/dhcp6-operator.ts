// The DHCPv6 part of Talos's OperatorSpecController: a DHCPv6 client for every merged
// dhcp6 OperatorSpec (the machine config's `dhcp: true` with `dhcpOptions.ipv6: true`,
// the platform's network-config; Talos never runs it by default), once the link is up
// and its IPv6 link-local address is no longer tentative (the client sends from it). It only emits: each lease's addresses (/128, global scope) and its
// DNS servers, NTP servers and hostname become operator-layer specs in
// `network-config` (ids dhcp6/<link>/...), which network.AddressSpecController puts
// into the kernel; it never touches the kernel itself.

import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { Dhcp6Client, type Dhcp6Transport, type Lease6Event } from "../../network/dhcp6/client.js";
import { lease6ToOutput } from "../../network/dhcp6/lease.js";
import { Dhcp6Port } from "../../network/dhcp6/udp.js";
import type { Timers } from "../../network/dhcp4/client.js";
import { type OperatorOutput, operatorSpecs } from "../../network/operator-output.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  AddressSpecType,
  type AddressSpecSpec,
  AddressStatusType,
  type AddressStatusSpec,
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
import { destroyOtherNames, keptNames, publishOperatorNames } from "./operator-names.js";

const log = logger("network-dhcp6-operator");

export interface Dhcp6OperatorOptions {
  /** Per-link transport; default: one shared UDP [::]:546 socket. */
  transport?: (linkName: string) => Promise<Dhcp6Transport>;
  timers?: Timers;
  /** Offer rapid commit in SOLICIT (default true, as Talos's client does). */
  rapidCommit?: boolean;
}

interface Running {
  client: Dhcp6Client;
  chain: Promise<void>;
  output?: OperatorOutput;
}

/** Links the merged OperatorSpecs give DHCPv6, with the DUID each wants (hex, "" for the default). */
function dhcp6Links(specs: readonly OperatorSpecSpec[]): Map<string, string> {
  return new Map(specs.filter((s) => s.operator === "dhcp6").map((s) => [s.linkName, s.dhcp6?.DUID ?? ""]));
}

export class Dhcp6OperatorController implements Controller {
  readonly name = "network.DHCP6OperatorController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: AddressStatusType, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: OperatorSpecType, kind: "weak" as const },
  ];
  readonly outputs = [
    { type: AddressSpecType, kind: "shared" as const },
    { type: HostnameSpecType, kind: "shared" as const },
    { type: ResolverSpecType, kind: "shared" as const },
    { type: TimeServerSpecType, kind: "shared" as const },
  ];
  private readonly running = new Map<string, Running>();
  private readonly transport: (linkName: string) => Promise<Dhcp6Transport>;
  private ctx: ControllerContext | undefined;
  private stopHooked: AbortSignal | undefined;

  constructor(private readonly opts: Dhcp6OperatorOptions = {}) {
    if (opts.transport) {
      this.transport = opts.transport;
    } else {
      const port = new Dhcp6Port();
      this.transport = (link) => port.transport(link);
    }
  }

  /** Links with a DHCPv6 client running, and what their lease asks for (the address specs' source). */
  leases(): Map<string, OperatorOutput | undefined> {
    return new Map([...this.running].map(([k, v]) => [k, v.output]));
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.ctx = ctx;
    if (this.stopHooked !== ctx.signal) {
      this.stopHooked = ctx.signal;
      ctx.signal.addEventListener("abort", () => void this.stopAll(), { once: true });
    }
    const asked = dhcp6Links(ctx.list<OperatorSpecSpec>(NETWORK_NAMESPACE, OperatorSpecType).map((r) => r.spec));
    const linkLocalReady = new Set(
      ctx
        .list<AddressStatusSpec>(NETWORK_NAMESPACE, AddressStatusType)
        .filter(
          (a) => a.spec.family === "inet6" && a.spec.scope === "link" && !a.spec.flags.split(",").includes("tentative"),
        )
        .map((a) => a.spec.linkName),
    );
    const wanted = new Set<string>();
    for (const link of ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)) {
      const name = link.metadata.id;
      const duid = asked.get(name);
      if (duid === undefined) continue;
      if (link.spec.operationalState !== "up" && link.spec.operationalState !== "unknown") continue;
      wanted.add(name);
      // A new client waits for its source address (Talos's waitIPv6LinkReady); a running one keeps running.
      if (!this.running.has(name) && linkLocalReady.has(name))
        await this.startClient(name, link.spec.hardwareAddr, duid);
    }
    for (const name of [...this.running.keys()]) {
      if (!wanted.has(name)) await this.stopClient(name, false);
    }
    this.publish(ctx);
  }

  private async startClient(linkName: string, hardwareAddr: string, duidHex: string): Promise<void> {
    const transport = await this.transport(linkName);
    const entry: Running = {
      chain: Promise.resolve(),
      client: new Dhcp6Client({
        linkName,
        hardwareAddr,
        transport,
        ...(duidHex ? { duid: Buffer.from(duidHex, "hex") } : {}),
        ...(this.opts.timers ? { timers: this.opts.timers } : {}),
        ...(this.opts.rapidCommit === false ? { rapidCommit: false } : {}),
        onEvent: (e) => {
          entry.chain = entry.chain.then(() => this.onLease(linkName, entry, e));
          return entry.chain;
        },
      }),
    };
    this.running.set(linkName, entry);
    log.info("starting DHCPv6", { link: linkName });
    entry.client.start();
  }

  private async stopClient(linkName: string, release: boolean): Promise<void> {
    const entry = this.running.get(linkName);
    if (!entry) return;
    this.running.delete(linkName);
    log.info("stopping DHCPv6", { link: linkName, release });
    await entry.client.stop({ release });
    await entry.chain;
  }

  private async stopAll(): Promise<void> {
    await Promise.all(
      [...this.running.keys()].map((l) =>
        this.stopClient(l, true).catch((err) => log.warn("DHCPv6 stop failed", { error: describeError(err), link: l })),
      ),
    );
  }

  private async onLease(linkName: string, entry: Running, e: Lease6Event): Promise<void> {
    entry.output = e.type === "bound" || e.type === "renewed" ? lease6ToOutput(linkName, e.lease) : undefined;
    if (this.ctx && !this.ctx.signal.aborted) this.ctx.requeueAfter(0);
  }

  private publish(ctx: ControllerContext): void {
    const keep = keptNames();
    const addresses = new Set<string>();
    for (const [link, entry] of this.running) {
      const out = entry.output;
      if (!out) continue;
      for (const [id, spec] of operatorSpecs(`dhcp6/${link}`, link, out).addresses) {
        ctx.modify<AddressSpecSpec>(NETWORK_CONFIG_NAMESPACE, AddressSpecType, id, () => spec);
        addresses.add(id);
      }
      publishOperatorNames(ctx, `dhcp6/${link}`, out, keep);
    }
    destroyOtherNames(ctx, keep);
    ctx.destroyOthers(NETWORK_CONFIG_NAMESPACE, AddressSpecType, addresses);
  }
}
