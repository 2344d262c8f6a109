// The DHCPv6 client state machine for one link (RFC 8415 §18): SOLICIT (rapid commit
// offered) -> ADVERTISE -> REQUEST -> REPLY (or a REPLY to the SOLICIT straight away),
// then RENEW at T1 with the server that gave the address, REBIND at T2 with any
// server, and a fresh SOLICIT when the address's valid lifetime ends. Retransmissions
// follow RFC 8415 §15 (doubling with ±10 % randomization up to each message's
// maximum). Packets go through a transport and time through Timers, so tests drive it
// without sockets or waits.

import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { realTimers, type Timers } from "../dhcp4/client.js";
import {
  decodeAddresses,
  decodeDomainNames,
  decodeIaNa,
  decodeMessage,
  decodeNtpServers,
  decodeStatus,
  Dhcp6PacketError,
  type Dhcp6Message,
  duidLL,
  encodeIaNa,
  encodeMessage,
  type IaAddress,
  MessageType,
  Option,
  option,
  STATUS_SUCCESS,
  u16,
} from "./packet.js";

export interface Dhcp6Transport {
  /** Sends to All_DHCP_Relay_Agents_and_Servers (ff02::1:2) port 547 out of this client's link. */
  send(packet: Buffer): Promise<void>;
  /** Sets the handler for every DHCPv6 packet arriving on port 546 (the client filters its own). */
  onReceive(handler: (packet: Buffer) => void): void;
  close(): void;
}

export interface Lease6 {
  addresses: IaAddress[];
  serverId: Buffer;
  /** Seconds (RFC 8415 §21.4): when to renew and rebind. */
  t1: number;
  t2: number;
  dnsServers: string[];
  searchDomains: string[];
  ntpServers: string[];
  /** From the client FQDN option, when the server sent one. */
  fqdn?: string;
  /** When the REPLY arrived (Timers.now()). */
  acquiredAt: number;
}

export type Lease6Event =
  | { type: "bound"; lease: Lease6 }
  | { type: "renewed"; lease: Lease6 }
  | { type: "expired"; lease: Lease6 }
  | { type: "released"; lease: Lease6 };

export type Client6State = "init" | "soliciting" | "requesting" | "bound" | "renewing" | "rebinding" | "stopped";

export interface Dhcp6ClientOptions {
  linkName: string;
  hardwareAddr: string;
  transport: Dhcp6Transport;
  onEvent: (event: Lease6Event) => void | Promise<void>;
  timers?: Timers;
  random?: () => number;
  /** Client DUID; default DUID-LL from the MAC (`.machine.network.interfaces[].dhcpOptions.duidv6` overrides it). */
  duid?: Buffer;
  iaid?: number;
  /** Offer rapid commit (a REPLY straight to the SOLICIT); default true. */
  rapidCommit?: boolean;
}

/** RFC 8415 §7.6 transmission parameters (ms), per message type. */
const timing = {
  solicit: { irt: 1000, mrt: 3_600_000, mrc: Infinity },
  request: { irt: 1000, mrt: 30_000, mrc: 10 },
  renew: { irt: 10_000, mrt: 600_000, mrc: Infinity },
  rebind: { irt: 10_000, mrt: 600_000, mrc: Infinity },
};
const INFINITE = 0xffffffff;
const requestedOptions = [Option.DnsServers, Option.DomainList, Option.NtpServer];

export class Dhcp6Client {
  private st: Client6State = "init";
  private xid = 0;
  private exchangeStart = 0;
  private retransmitTimer: unknown;
  private leaseTimers: unknown[] = [];
  private current: Lease6 | undefined;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly duid: Buffer;
  private readonly iaid: number;
  private readonly log;

  constructor(private readonly opts: Dhcp6ClientOptions) {
    this.timers = opts.timers ?? realTimers;
    this.random = opts.random ?? Math.random;
    this.duid = opts.duid ?? duidLL(opts.hardwareAddr);
    // Talos's client uses the link's MAC tail as IAID; any value stable per link does.
    this.iaid = opts.iaid ?? this.duid.readUInt32BE(this.duid.length - 4);
    this.log = logger("dhcp6", { link: opts.linkName });
    opts.transport.onReceive((packet) => this.receive(packet));
  }

  get state(): Client6State {
    return this.st;
  }

  get lease(): Lease6 | undefined {
    return this.current;
  }

  start(): void {
    if (this.st !== "init") return;
    this.solicit();
  }

  /** Stops all timers; with release, tells the server the addresses are free again. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    if (this.st === "stopped") return;
    const held = this.current;
    this.st = "stopped";
    this.clearRetransmit();
    this.clearLeaseTimers();
    if (held && opts.release) {
      this.newTransaction();
      try {
        await this.opts.transport.send(encodeMessage(this.message(MessageType.Release, held.serverId, held.addresses)));
      } catch (err) {
        this.log.warn("DHCPv6 RELEASE not sent", { error: describeError(err) });
      }
      this.current = undefined;
      await this.emit({ type: "released", lease: held });
    }
    this.opts.transport.close();
  }

  private solicit(): void {
    this.clearRetransmit();
    this.clearLeaseTimers();
    this.st = "soliciting";
    this.newTransaction();
    this.log.info("sending DHCPv6 SOLICIT");
    this.transmit(
      timing.solicit,
      () => this.message(MessageType.Solicit, undefined, [], this.opts.rapidCommit !== false),
      () => this.solicit(),
    );
  }

  private request(advertise: Dhcp6Message): void {
    this.clearRetransmit();
    this.st = "requesting";
    this.newTransaction();
    const serverId = option(advertise, Option.ServerId)!;
    const addresses = this.iaOf(advertise)?.addresses ?? [];
    this.transmit(
      timing.request,
      () => this.message(MessageType.Request, serverId, addresses),
      () => this.solicit(),
    );
  }

  private renew(rebinding: boolean): void {
    const lease = this.current!;
    this.clearRetransmit();
    this.st = rebinding ? "rebinding" : "renewing";
    this.newTransaction();
    this.log.info(rebinding ? "rebinding DHCPv6 lease" : "renewing DHCPv6 lease", {
      addresses: lease.addresses.map((a) => a.address),
    });
    const t = rebinding ? timing.rebind : timing.renew;
    this.transmit(
      t,
      () =>
        this.message(
          rebinding ? MessageType.Rebind : MessageType.Renew,
          rebinding ? undefined : lease.serverId,
          lease.addresses,
        ),
      () => undefined,
    );
  }

  /** Sends build() now and again (RFC 8415 §15), giving up after mrc sends. */
  private transmit(t: { irt: number; mrt: number; mrc: number }, build: () => Dhcp6Message, giveUp: () => void): void {
    let sent = 0;
    // The first SOLICIT's delay is only ever lengthened (RAND > 0), as §15 prescribes.
    let rt = t.irt * (1 + (this.st === "soliciting" ? this.random() : this.random() * 2 - 1) * 0.1);
    const once = () => {
      if (sent >= t.mrc) {
        giveUp();
        return;
      }
      sent++;
      const m = build();
      this.opts.transport
        .send(encodeMessage(m))
        .catch((err) =>
          this.log.warn("DHCPv6 packet not sent", { error: describeError(err), type: MessageType[m.type] }),
        );
      this.retransmitTimer = this.timers.setTimeout(once, rt);
      rt = Math.min(2 * rt, t.mrt) * (1 + (this.random() * 2 - 1) * 0.1);
    };
    once();
  }

  private receive(packet: Buffer): void {
    if (this.st === "stopped" || this.st === "init" || this.st === "bound") return;
    // This runs in the socket's event handler: a malformed option (status, NTP servers) drops the packet,
    // before any state changes.
    try {
      this.handle(decodeMessage(packet));
    } catch (err) {
      if (!(err instanceof Dhcp6PacketError)) throw err;
      this.log.debug("ignoring malformed DHCPv6 packet", { error: describeError(err) });
    }
  }

  private handle(m: Dhcp6Message): void {
    if (m.transactionId !== this.xid) return;
    const clientId = option(m, Option.ClientId);
    if (!clientId?.equals(this.duid) || !option(m, Option.ServerId)) return;
    const status = option(m, Option.StatusCode);
    const statusCode = status ? decodeStatus(status).code : STATUS_SUCCESS;
    if (this.st === "soliciting") {
      if (
        m.type === MessageType.Advertise &&
        statusCode === STATUS_SUCCESS &&
        (this.iaOf(m)?.addresses.length ?? 0) > 0
      ) {
        this.log.info("received DHCPv6 ADVERTISE", { addresses: this.iaOf(m)!.addresses.map((a) => a.address) });
        this.request(m);
      } else if (m.type === MessageType.Reply && option(m, Option.RapidCommit)) {
        this.replied(m);
      }
      return;
    }
    if (m.type !== MessageType.Reply) return;
    if (statusCode !== STATUS_SUCCESS || (this.iaOf(m)?.addresses.length ?? 0) === 0) {
      this.log.warn("DHCPv6 REPLY without an address", {
        status: status ? decodeStatus(status) : undefined,
        state: this.st,
      });
      // While renewing or rebinding the lease still holds until it expires; a refused request starts over.
      if (this.st === "requesting") {
        this.clearRetransmit();
        this.st = "init";
        this.retransmitTimer = this.timers.setTimeout(() => this.solicit(), 1000);
      }
      return;
    }
    this.replied(m);
  }

  private iaOf(m: Dhcp6Message) {
    for (const [code, v] of m.options) {
      if (code !== Option.IaNa) continue;
      try {
        const ia = decodeIaNa(v);
        if (ia.iaid === this.iaid && (ia.status === undefined || ia.status.code === STATUS_SUCCESS)) return ia;
      } catch (err) {
        this.log.debug("ignoring malformed IA_NA", { error: describeError(err) });
      }
    }
    return undefined;
  }

  private replied(m: Dhcp6Message): void {
    const ia = this.iaOf(m)!;
    const wasBound = this.current !== undefined;
    const preferred = Math.min(...ia.addresses.map((a) => a.preferredLifetime));
    const dns = option(m, Option.DnsServers);
    const domains = option(m, Option.DomainList);
    const ntp = option(m, Option.NtpServer);
    const fqdn = option(m, Option.Fqdn);
    const lease: Lease6 = {
      addresses: ia.addresses,
      serverId: option(m, Option.ServerId)!,
      // §21.4: with T1/T2 of 0 the client picks them (0.5 and 0.8 of the preferred lifetime).
      t1: ia.t1 !== 0 ? ia.t1 : preferred === INFINITE ? INFINITE : Math.floor(preferred * 0.5),
      t2: ia.t2 !== 0 ? ia.t2 : preferred === INFINITE ? INFINITE : Math.floor(preferred * 0.8),
      dnsServers: dns ? decodeAddresses(dns) : [],
      searchDomains: domains ? decodeDomainNames(domains) : [],
      ntpServers: ntp ? decodeNtpServers(ntp) : [],
      acquiredAt: this.timers.now(),
    };
    // RFC 4704: one flags byte, then the name.
    if (fqdn && fqdn.length > 1) lease.fqdn = decodeDomainNames(fqdn.subarray(1))[0];
    this.clearRetransmit();
    this.current = lease;
    this.st = "bound";
    this.log.info("DHCPv6 lease acquired", {
      addresses: lease.addresses.map((a) => a.address),
      t1: lease.t1,
      t2: lease.t2,
    });
    this.scheduleLeaseTimers(lease);
    void this.emit({ type: wasBound ? "renewed" : "bound", lease });
  }

  private scheduleLeaseTimers(lease: Lease6): void {
    this.clearLeaseTimers();
    const valid = Math.max(...lease.addresses.map((a) => a.validLifetime));
    const at = (s: number) => Math.max(0, lease.acquiredAt + s * 1000 - this.timers.now());
    if (lease.t1 !== INFINITE) this.leaseTimers.push(this.timers.setTimeout(() => this.renew(false), at(lease.t1)));
    if (lease.t2 !== INFINITE) this.leaseTimers.push(this.timers.setTimeout(() => this.renew(true), at(lease.t2)));
    if (valid !== INFINITE) {
      this.leaseTimers.push(
        this.timers.setTimeout(() => {
          this.log.warn("DHCPv6 lease expired", { addresses: lease.addresses.map((a) => a.address) });
          this.current = undefined;
          void this.emit({ type: "expired", lease });
          this.solicit();
        }, at(valid)),
      );
    }
  }

  private message(
    type: MessageType,
    serverId: Buffer | undefined,
    addresses: IaAddress[],
    rapidCommit = false,
  ): Dhcp6Message {
    const elapsed = Math.min(0xffff, Math.floor((this.timers.now() - this.exchangeStart) / 10));
    const options: [number, Buffer][] = [[Option.ClientId, this.duid]];
    if (serverId) options.push([Option.ServerId, serverId]);
    options.push([Option.ElapsedTime, u16(elapsed)]);
    if (type !== MessageType.Release) options.push([Option.Oro, Buffer.concat(requestedOptions.map(u16))]);
    if (rapidCommit) options.push([Option.RapidCommit, Buffer.alloc(0)]);
    options.push([
      Option.IaNa,
      encodeIaNa(
        this.iaid,
        addresses.map((a) => (type === MessageType.Release ? { ...a, preferredLifetime: 0, validLifetime: 0 } : a)),
      ),
    ]);
    return { type, transactionId: this.xid, options };
  }

  private newTransaction(): void {
    this.xid = Math.floor(this.random() * 0xffffff) & 0xffffff;
    this.exchangeStart = this.timers.now();
  }

  private clearRetransmit(): void {
    if (this.retransmitTimer !== undefined) this.timers.clearTimeout(this.retransmitTimer);
    this.retransmitTimer = undefined;
  }

  private clearLeaseTimers(): void {
    for (const t of this.leaseTimers) this.timers.clearTimeout(t);
    this.leaseTimers = [];
  }

  private async emit(event: Lease6Event): Promise<void> {
    try {
      await this.opts.onEvent(event);
    } catch (err) {
      this.log.error("DHCPv6 lease event handler failed", { error: describeError(err), event: event.type });
    }
  }
}
