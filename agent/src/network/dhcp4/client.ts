// The DHCPv4 client state machine (RFC 2131 §4.4): INIT -> SELECTING -> REQUESTING
// -> BOUND -> RENEWING (T1, unicast) -> REBINDING (T2, broadcast) -> expiry, with
// exponential retransmission and a RELEASE on stop. Packets go through a
// DhcpTransport and time through Timers, so tests drive it without sockets or waits.

import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import {
  BOOTREQUEST,
  type ClasslessRoute,
  type DhcpMessage,
  FLAG_BROADCAST,
  type ParsedOptions,
  MessageType,
  Option,
  decodeMessage,
  encodeMessage,
  ipToBuffer,
  macToBuffer,
  maskToPrefixLen,
  parseOptions,
  u16Buffer,
} from "./packet.js";

export interface DhcpTransport {
  /** Broadcast goes to 255.255.255.255:67 out of this client's link; otherwise unicast to address:67. */
  send(packet: Buffer, dest: { broadcast: true } | { broadcast: false; address: string }): Promise<void>;
  /** Sets the handler for every DHCP packet arriving on port 68 (the client filters its own). */
  onReceive(handler: (packet: Buffer) => void): void;
  close(): void;
}

export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

// Node fires timers longer than 2^31-1 ms at once; leases can be longer than that (24.8 days).
const MAX_TIMER_MS = 2 ** 31 - 1;

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle: { t?: NodeJS.Timeout } = {};
    const arm = (left: number) => {
      handle.t = left > MAX_TIMER_MS ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS) : setTimeout(fn, left);
    };
    arm(ms);
    return handle;
  },
  clearTimeout: (h) => clearTimeout((h as { t?: NodeJS.Timeout }).t),
};

export interface Lease {
  address: string;
  prefixLen: number;
  serverId: string;
  routers: string[];
  dnsServers: string[];
  ntpServers: string[];
  hostname?: string;
  domainName?: string;
  mtu?: number;
  broadcast?: string;
  classlessRoutes: ClasslessRoute[];
  /** Seconds; 0xffffffff means infinite. */
  leaseTime: number;
  renewalTime: number;
  rebindingTime: number;
  /** When the ACK arrived (Timers.now()). */
  acquiredAt: number;
}

export type LeaseEvent =
  | { type: "bound"; lease: Lease }
  | { type: "renewed"; lease: Lease }
  | { type: "expired"; lease: Lease }
  | { type: "released"; lease: Lease };

export type ClientState = "init" | "selecting" | "requesting" | "bound" | "renewing" | "rebinding" | "stopped";

export interface Dhcp4ClientOptions {
  linkName: string;
  hardwareAddr: string;
  transport: DhcpTransport;
  onEvent: (event: LeaseEvent) => void | Promise<void>;
  timers?: Timers;
  random?: () => number;
  /** Sent as option 12 in DISCOVER/REQUEST when set. */
  hostname?: string;
  /** Option 61; default: hardware type 1 + the MAC (Talos's "mac" client identifier). */
  clientId?: Buffer;
  /** First retransmission delay and its cap (RFC 2131: 4 s doubling to 64 s). */
  retransmitInitialMs?: number;
  retransmitMaxMs?: number;
  /** REQUESTs sent in REQUESTING before starting over. */
  requestAttempts?: number;
  /** Lower bound for retransmissions while renewing/rebinding (RFC 2131: 60 s). */
  renewRetransmitMinMs?: number;
  /** Lease time assumed when the server sends none (seconds). */
  defaultLeaseTime?: number;
}

const INFINITE = 0xffffffff;
const requestedParams = [
  Option.SubnetMask,
  Option.Router,
  Option.DomainNameServer,
  Option.HostName,
  Option.DomainName,
  Option.InterfaceMTU,
  Option.BroadcastAddress,
  Option.NTPServers,
  Option.LeaseTime,
  Option.ServerIdentifier,
  Option.RenewalTime,
  Option.RebindingTime,
  Option.DomainSearch,
  Option.ClasslessStaticRoute,
];

export class Dhcp4Client {
  private st: ClientState = "init";
  private xid = 0;
  private startedAt = 0;
  private retransmitTimer: unknown;
  private leaseTimers: unknown[] = [];
  private current: Lease | undefined;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly log;

  constructor(private readonly opts: Dhcp4ClientOptions) {
    this.timers = opts.timers ?? realTimers;
    this.random = opts.random ?? Math.random;
    this.log = logger("dhcp4", { link: opts.linkName });
    opts.transport.onReceive((packet) => this.receive(packet));
  }

  get state(): ClientState {
    return this.st;
  }

  get lease(): Lease | undefined {
    return this.current;
  }

  start(): void {
    if (this.st !== "init") return;
    this.discover();
  }

  /** Stops all timers; with release, tells the server the address is free again. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    if (this.st === "stopped") return;
    const held =
      this.current && (this.st === "bound" || this.st === "renewing" || this.st === "rebinding")
        ? this.current
        : undefined;
    this.st = "stopped";
    this.clearRetransmit();
    this.clearLeaseTimers();
    if (held && opts.release) {
      const release = this.message(MessageType.Release, { ciaddr: held.address, broadcast: false });
      release.options.set(Option.ServerIdentifier, ipToBuffer(held.serverId));
      try {
        await this.opts.transport.send(encodeMessage(release), { broadcast: false, address: held.serverId });
      } catch (err) {
        this.log.warn("DHCPRELEASE not sent", { error: describeError(err) });
      }
      this.current = undefined;
      await this.emit({ type: "released", lease: held });
    }
    this.opts.transport.close();
  }

  private discover(): void {
    this.clearRetransmit();
    this.clearLeaseTimers();
    this.st = "selecting";
    this.newTransaction();
    this.log.info("sending DHCPDISCOVER");
    this.transmit(
      () => {
        const m = this.message(MessageType.Discover, { broadcast: true });
        return m;
      },
      () => this.discover(),
    );
  }

  private request(offer: DhcpMessage): void {
    this.clearRetransmit();
    this.st = "requesting";
    const serverId = parseOptions(offer.options).serverId ?? offer.siaddr;
    this.transmit(
      () => {
        const m = this.message(MessageType.Request, { broadcast: true });
        m.options.set(Option.RequestedIP, ipToBuffer(offer.yiaddr));
        m.options.set(Option.ServerIdentifier, ipToBuffer(serverId));
        return m;
      },
      () => this.discover(),
      this.opts.requestAttempts ?? 4,
    );
  }

  private renew(rebinding: boolean): void {
    const lease = this.current!;
    this.clearRetransmit();
    this.st = rebinding ? "rebinding" : "renewing";
    this.newTransaction();
    this.log.info(rebinding ? "rebinding lease" : "renewing lease", { address: lease.address });
    const deadline = lease.acquiredAt + (rebinding ? lease.leaseTime : lease.rebindingTime) * 1000;
    const send = () => {
      const m = this.message(MessageType.Request, { ciaddr: lease.address, broadcast: false });
      const dest = rebinding
        ? ({ broadcast: true } as const)
        : ({ broadcast: false, address: lease.serverId } as const);
      this.opts.transport
        .send(encodeMessage(m), dest)
        .catch((err) => this.log.warn("DHCPREQUEST not sent", { error: describeError(err) }));
      // RFC 2131 §4.4.5: wait half the time left, but not less than the floor.
      const left = deadline - this.timers.now();
      const wait = Math.max(this.opts.renewRetransmitMinMs ?? 60_000, left / 2);
      if (left > 0 && wait < left) this.retransmitTimer = this.timers.setTimeout(send, wait);
    };
    send();
  }

  /** Sends build() now and again with exponential backoff; after `attempts` sends calls giveUp. */
  private transmit(build: () => DhcpMessage, giveUp: () => void, attempts = Infinity): void {
    let sent = 0;
    let delay = this.opts.retransmitInitialMs ?? 4000;
    const max = this.opts.retransmitMaxMs ?? 64_000;
    const once = () => {
      if (sent >= attempts) {
        giveUp();
        return;
      }
      sent++;
      const m = build();
      this.opts.transport.send(encodeMessage(m), { broadcast: true }).catch((err) =>
        this.log.warn("DHCP packet not sent", {
          error: describeError(err),
          type: MessageType[m.options.get(Option.MessageType)![0]!],
        }),
      );
      // ±1 s randomization as RFC 2131 suggests, scaled down for short test delays.
      const jitter = (this.random() * 2 - 1) * Math.min(1000, delay / 4);
      this.retransmitTimer = this.timers.setTimeout(once, Math.max(0, delay + jitter));
      delay = Math.min(delay * 2, max);
    };
    once();
  }

  private receive(packet: Buffer): void {
    if (this.st === "stopped" || this.st === "init" || this.st === "bound") return;
    let m: DhcpMessage;
    let parsed: ParsedOptions;
    // A bad option (e.g. a truncated classless route) makes the packet malformed too: this runs in the socket's event handler.
    try {
      m = decodeMessage(packet);
      parsed = parseOptions(m.options);
    } catch (err) {
      this.log.debug("ignoring malformed DHCP packet", { error: describeError(err) });
      return;
    }
    if (m.op !== 2 || m.xid !== this.xid || m.chaddr.toLowerCase() !== this.opts.hardwareAddr.toLowerCase()) return;
    switch (this.st) {
      case "selecting":
        if (parsed.messageType === MessageType.Offer && m.yiaddr !== "0.0.0.0") {
          this.log.info("received DHCPOFFER", { address: m.yiaddr, server: parsed.serverId });
          this.request(m);
        }
        return;
      case "requesting":
      case "renewing":
      case "rebinding":
        if (parsed.messageType === MessageType.Ack) {
          this.acked(m);
        } else if (parsed.messageType === MessageType.Nak) {
          this.log.warn("received DHCPNAK", { message: parsed.message });
          const lost = this.current;
          this.current = undefined;
          if (lost && this.st !== "requesting") void this.emit({ type: "expired", lease: lost });
          this.clearRetransmit();
          // The lost lease's T2 and expiry must not fire during the pause (renew() needs a lease).
          this.clearLeaseTimers();
          // Start over after a short pause (avoids a tight loop against a confused server).
          this.st = "init";
          this.retransmitTimer = this.timers.setTimeout(() => this.discover(), 1000);
        }
        return;
    }
  }

  private acked(ack: DhcpMessage): void {
    const p = parseOptions(ack.options);
    const wasBound = this.current !== undefined;
    const leaseTime = p.leaseTime ?? this.opts.defaultLeaseTime ?? 1800;
    let prefixLen = 24;
    try {
      prefixLen = p.subnetMask ? maskToPrefixLen(p.subnetMask) : classfulPrefix(ack.yiaddr);
    } catch (err) {
      this.log.warn("bad subnet mask, using the classful default", { error: describeError(err) });
      prefixLen = classfulPrefix(ack.yiaddr);
    }
    const lease: Lease = {
      address: ack.yiaddr,
      prefixLen,
      serverId: p.serverId ?? this.current?.serverId ?? ack.siaddr,
      routers: p.routers,
      dnsServers: p.dnsServers,
      ntpServers: p.ntpServers,
      classlessRoutes: p.classlessRoutes,
      leaseTime,
      renewalTime: p.renewalTime ?? (leaseTime === INFINITE ? INFINITE : Math.floor(leaseTime * 0.5)),
      rebindingTime: p.rebindingTime ?? (leaseTime === INFINITE ? INFINITE : Math.floor(leaseTime * 0.875)),
      acquiredAt: this.timers.now(),
    };
    if (p.hostname !== undefined) lease.hostname = p.hostname;
    if (p.domainName !== undefined) lease.domainName = p.domainName;
    if (p.mtu !== undefined) lease.mtu = p.mtu;
    if (p.broadcast !== undefined) lease.broadcast = p.broadcast;
    this.clearRetransmit();
    this.current = lease;
    this.st = "bound";
    this.log.info("lease acquired", {
      address: `${lease.address}/${lease.prefixLen}`,
      server: lease.serverId,
      leaseTime,
    });
    this.scheduleLeaseTimers(lease);
    void this.emit({ type: wasBound ? "renewed" : "bound", lease });
  }

  private scheduleLeaseTimers(lease: Lease): void {
    this.clearLeaseTimers();
    if (lease.leaseTime === INFINITE) return;
    const at = (s: number) => Math.max(0, lease.acquiredAt + s * 1000 - this.timers.now());
    this.leaseTimers.push(
      this.timers.setTimeout(() => this.renew(false), at(lease.renewalTime)),
      this.timers.setTimeout(() => this.renew(true), at(lease.rebindingTime)),
      this.timers.setTimeout(() => {
        this.log.warn("lease expired", { address: lease.address });
        this.current = undefined;
        void this.emit({ type: "expired", lease });
        this.discover();
      }, at(lease.leaseTime)),
    );
  }

  private message(type: MessageType, o: { ciaddr?: string; broadcast: boolean }): DhcpMessage {
    const options = new Map<number, Buffer>();
    options.set(Option.MessageType, Buffer.from([type]));
    options.set(
      Option.ClientIdentifier,
      this.opts.clientId ?? Buffer.concat([Buffer.from([1]), macToBuffer(this.opts.hardwareAddr).subarray(0, 6)]),
    );
    if (type !== MessageType.Release) {
      options.set(Option.ParameterRequestList, Buffer.from(requestedParams));
      options.set(Option.MaxMessageSize, u16Buffer(1500));
      if (this.opts.hostname) options.set(Option.HostName, Buffer.from(this.opts.hostname, "latin1"));
    }
    return {
      op: BOOTREQUEST,
      xid: this.xid,
      secs: Math.min(0xffff, Math.floor((this.timers.now() - this.startedAt) / 1000)),
      flags: o.broadcast ? FLAG_BROADCAST : 0,
      ciaddr: o.ciaddr ?? "0.0.0.0",
      yiaddr: "0.0.0.0",
      siaddr: "0.0.0.0",
      giaddr: "0.0.0.0",
      chaddr: this.opts.hardwareAddr,
      options,
    };
  }

  private newTransaction(): void {
    this.xid = Math.floor(this.random() * 0xffffffff) >>> 0;
    this.startedAt = this.timers.now();
  }

  private clearRetransmit(): void {
    if (this.retransmitTimer !== undefined) this.timers.clearTimeout(this.retransmitTimer);
    this.retransmitTimer = undefined;
  }

  private clearLeaseTimers(): void {
    for (const t of this.leaseTimers) this.timers.clearTimeout(t);
    this.leaseTimers = [];
  }

  private async emit(event: LeaseEvent): Promise<void> {
    try {
      await this.opts.onEvent(event);
    } catch (err) {
      this.log.error("lease event handler failed", { error: describeError(err), event: event.type });
    }
  }
}

function classfulPrefix(ip: string): number {
  const first = Number(ip.split(".")[0]);
  return first < 128 ? 8 : first < 192 ? 16 : 24;
}
