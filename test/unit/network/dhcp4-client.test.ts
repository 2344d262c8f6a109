import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Dhcp4Client,
  type DhcpTransport,
  type LeaseEvent,
  type Timers,
} from "../../../agent/src/network/dhcp4/client.js";
import {
  BOOTREPLY,
  type DhcpMessage,
  FLAG_BROADCAST,
  MessageType,
  Option,
  decodeMessage,
  encodeMessage,
  ipToBuffer,
  parseOptions,
  u32Buffer,
} from "../../../agent/src/network/dhcp4/packet.js";

/** Virtual time: timers run only when the test advances the clock. */
class ManualTimers implements Timers {
  private t = 1_000_000;
  private seq = 0;
  private pending = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.pending.delete(h as number);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.pending.entries()].filter(([, p]) => p.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) break;
      this.pending.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await flush();
    }
    this.t = end;
  }
}

const flush = () => new Promise<void>((r) => setImmediate(r));

interface Sent {
  msg: DhcpMessage;
  broadcast: boolean;
  to?: string;
}

class FakeTransport implements DhcpTransport {
  sent: Sent[] = [];
  closed = false;
  private handler: ((p: Buffer) => void) | undefined;
  async send(packet: Buffer, dest: { broadcast: true } | { broadcast: false; address: string }): Promise<void> {
    this.sent.push({
      msg: decodeMessage(packet),
      broadcast: dest.broadcast,
      ...(dest.broadcast ? {} : { to: dest.address }),
    });
  }
  onReceive(h: (p: Buffer) => void): void {
    this.handler = h;
  }
  close(): void {
    this.closed = true;
  }
  deliver(m: DhcpMessage): void {
    this.handler!(encodeMessage(m));
  }
  last(): Sent {
    return this.sent[this.sent.length - 1]!;
  }
  types(): string[] {
    return this.sent.map((s) => MessageType[parseOptions(s.msg.options).messageType!]!);
  }
}

const MAC = "02:00:00:00:00:01";

function reply(req: DhcpMessage, type: MessageType, extra: [number, Buffer][] = [], yiaddr = "10.1.0.50"): DhcpMessage {
  return {
    op: BOOTREPLY,
    xid: req.xid,
    secs: 0,
    flags: req.flags,
    ciaddr: req.ciaddr,
    yiaddr,
    siaddr: "0.0.0.0",
    giaddr: "0.0.0.0",
    chaddr: req.chaddr,
    options: new Map<number, Buffer>([
      [Option.MessageType, Buffer.from([type])],
      [Option.ServerIdentifier, ipToBuffer("10.1.0.1")],
      [Option.SubnetMask, ipToBuffer("255.255.255.0")],
      [Option.Router, ipToBuffer("10.1.0.1")],
      [Option.DomainNameServer, ipToBuffer("10.1.0.53")],
      [Option.LeaseTime, u32Buffer(100)],
      ...extra,
    ]),
  };
}

function setup() {
  const timers = new ManualTimers();
  const transport = new FakeTransport();
  const events: LeaseEvent[] = [];
  let r = 0;
  const client = new Dhcp4Client({
    linkName: "eth0",
    hardwareAddr: MAC,
    transport,
    timers,
    random: () => ((r = (r * 7 + 3) % 11), r / 11),
    onEvent: (e) => {
      events.push(e);
    },
  });
  return { timers, transport, events, client };
}

async function bind(s: ReturnType<typeof setup>) {
  s.client.start();
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer));
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Ack));
  await flush();
}

test("DISCOVER -> OFFER -> REQUEST -> ACK binds a lease with every option", async () => {
  const s = setup();
  s.client.start();
  await flush();
  const discover = s.transport.last();
  assert.equal(parseOptions(discover.msg.options).messageType, MessageType.Discover);
  assert.equal(discover.broadcast, true);
  assert.equal(discover.msg.flags & FLAG_BROADCAST, FLAG_BROADCAST, "BROADCAST flag set before we have an address");
  assert.deepEqual([...discover.msg.options.get(Option.ClientIdentifier)!], [1, 2, 0, 0, 0, 0, 1]);
  assert.equal(s.client.state, "selecting");

  s.transport.deliver(reply(discover.msg, MessageType.Offer));
  await flush();
  const request = s.transport.last();
  assert.equal(parseOptions(request.msg.options).messageType, MessageType.Request);
  assert.deepEqual([...request.msg.options.get(Option.RequestedIP)!], [10, 1, 0, 50]);
  assert.deepEqual([...request.msg.options.get(Option.ServerIdentifier)!], [10, 1, 0, 1]);
  assert.equal(s.client.state, "requesting");

  s.transport.deliver(
    reply(request.msg, MessageType.Ack, [
      [Option.NTPServers, ipToBuffer("10.1.0.123")],
      [Option.HostName, Buffer.from("n1")],
    ]),
  );
  await flush();
  assert.equal(s.client.state, "bound");
  assert.equal(s.events.length, 1);
  const e = s.events[0]!;
  assert.equal(e.type, "bound");
  assert.equal(e.lease.address, "10.1.0.50");
  assert.equal(e.lease.prefixLen, 24);
  assert.deepEqual(e.lease.routers, ["10.1.0.1"]);
  assert.deepEqual(e.lease.dnsServers, ["10.1.0.53"]);
  assert.deepEqual(e.lease.ntpServers, ["10.1.0.123"]);
  assert.equal(e.lease.hostname, "n1");
  assert.equal(e.lease.renewalTime, 50, "T1 defaults to half the lease");
  assert.equal(e.lease.rebindingTime, 87, "T2 defaults to 7/8 of the lease");
});

test("replies for another transaction or another MAC are ignored", async () => {
  const s = setup();
  s.client.start();
  await flush();
  const d = s.transport.last().msg;
  s.transport.deliver(reply({ ...d, xid: d.xid + 1 }, MessageType.Offer));
  s.transport.deliver(reply({ ...d, chaddr: "02:00:00:00:00:99" }, MessageType.Offer));
  await flush();
  assert.equal(s.client.state, "selecting");
  assert.equal(s.transport.sent.length, 1);
});

test("DISCOVER is retransmitted with exponential backoff", async () => {
  const s = setup();
  s.client.start();
  await flush();
  await s.timers.advance(3000);
  assert.equal(s.transport.sent.length, 1, "nothing before ~4 s");
  await s.timers.advance(2000);
  assert.equal(s.transport.sent.length, 2);
  await s.timers.advance(6000);
  assert.equal(s.transport.sent.length, 2, "second wait is ~8 s");
  await s.timers.advance(3000);
  assert.equal(s.transport.sent.length, 3);
  assert.deepEqual(s.transport.types(), ["Discover", "Discover", "Discover"]);
});

test("unanswered REQUESTs fall back to DISCOVER", async () => {
  const s = setup();
  s.client.start();
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer));
  await flush();
  await s.timers.advance(4000 + 8000 + 16000 + 32000 + 4000);
  // Jitter may already have produced the next DISCOVER retransmission; the order is what matters.
  assert.deepEqual(s.transport.types().slice(0, 6), [
    "Discover",
    "Request",
    "Request",
    "Request",
    "Request",
    "Discover",
  ]);
  assert.equal(s.client.state, "selecting");
});

test("NAK while requesting restarts discovery", async () => {
  const s = setup();
  s.client.start();
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer));
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Nak));
  await flush();
  assert.equal(s.client.state, "init");
  await s.timers.advance(1000);
  assert.equal(s.client.state, "selecting");
  assert.equal(s.transport.types().at(-1), "Discover");
  assert.equal(s.events.length, 0);
});

test("T1 renews by unicast to the server, the ACK extends the lease", async () => {
  const s = setup();
  await bind(s);
  await s.timers.advance(49_000);
  assert.equal(s.client.state, "bound");
  await s.timers.advance(1000);
  assert.equal(s.client.state, "renewing");
  const renew = s.transport.last();
  assert.equal(renew.broadcast, false);
  assert.equal(renew.to, "10.1.0.1");
  assert.equal(renew.msg.ciaddr, "10.1.0.50");
  assert.equal(renew.msg.options.has(Option.RequestedIP), false, "RENEWING carries ciaddr, not option 50");
  assert.equal(renew.msg.flags & FLAG_BROADCAST, 0);
  s.transport.deliver(reply(renew.msg, MessageType.Ack));
  await flush();
  assert.equal(s.client.state, "bound");
  assert.deepEqual(
    s.events.map((e) => e.type),
    ["bound", "renewed"],
  );
  // The new lease restarts the clock: no rebinding at the old T2.
  await s.timers.advance(40_000);
  assert.equal(s.client.state, "bound");
});

test("without answers the client rebinds at T2 by broadcast and loses the lease at expiry", async () => {
  const s = setup();
  await bind(s);
  await s.timers.advance(87_000);
  assert.equal(s.client.state, "rebinding");
  assert.equal(s.transport.last().broadcast, true);
  assert.equal(s.transport.last().msg.ciaddr, "10.1.0.50");
  await s.timers.advance(13_000);
  assert.deepEqual(
    s.events.map((e) => e.type),
    ["bound", "expired"],
  );
  assert.equal(s.client.state, "selecting");
  assert.equal(s.transport.types().at(-1), "Discover");
});

test("stop with release sends DHCPRELEASE and reports it", async () => {
  const s = setup();
  await bind(s);
  await s.client.stop({ release: true });
  const rel = s.transport.last();
  assert.equal(parseOptions(rel.msg.options).messageType, MessageType.Release);
  assert.equal(rel.to, "10.1.0.1");
  assert.equal(rel.msg.ciaddr, "10.1.0.50");
  assert.deepEqual(
    s.events.map((e) => e.type),
    ["bound", "released"],
  );
  assert.equal(s.transport.closed, true);
  await s.timers.advance(200_000);
  assert.equal(s.transport.types().filter((t) => t !== "Release").length, 2, "no timers survive stop");
});

test("real timers split delays beyond Node's 2^31-1 ms limit instead of firing at once", async (t) => {
  const { realTimers } = await import("../../../agent/src/network/dhcp4/client.js");
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let fired = 0;
  const h = realTimers.setTimeout(() => fired++, 30 * 24 * 3600 * 1000);
  t.mock.timers.tick(2 ** 31 - 1);
  assert.equal(fired, 0);
  t.mock.timers.tick(30 * 24 * 3600 * 1000 - (2 ** 31 - 1) - 1);
  assert.equal(fired, 0);
  t.mock.timers.tick(1);
  assert.equal(fired, 1);
  const h2 = realTimers.setTimeout(() => fired++, 10);
  realTimers.clearTimeout(h2);
  t.mock.timers.tick(20);
  assert.equal(fired, 1);
  realTimers.clearTimeout(h);
});

test("an OFFER or ACK with a malformed option is ignored, not thrown out of the socket handler", async () => {
  const s = setup();
  s.client.start();
  await flush();
  // Option 121 claiming a /24 with only two bytes after the width: truncated.
  const badRoutes: [number, Buffer][] = [[Option.ClasslessStaticRoute, Buffer.from([24, 10, 2])]];
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer, badRoutes));
  await flush();
  assert.equal(s.client.state, "selecting");
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer));
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Ack, badRoutes));
  await flush();
  assert.equal(s.client.state, "requesting");
  assert.deepEqual(s.events, []);
});

test("NAK while renewing drops the lease's timers: T2 and expiry do not fire during the pause", async () => {
  const s = setup();
  s.client.start();
  await flush();
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Offer));
  await flush();
  // T1 at 50 s, T2 at 51 s: T2 falls inside the 1 s pause after a NAK at 50.5 s.
  s.transport.deliver(
    reply(s.transport.last().msg, MessageType.Ack, [
      [Option.RenewalTime, u32Buffer(50)],
      [Option.RebindingTime, u32Buffer(51)],
    ]),
  );
  await flush();
  await s.timers.advance(50_000);
  assert.equal(s.client.state, "renewing");
  await s.timers.advance(500);
  s.transport.deliver(reply(s.transport.last().msg, MessageType.Nak));
  await flush();
  assert.equal(s.client.state, "init");
  await s.timers.advance(1000);
  assert.equal(s.client.state, "selecting");
  await s.timers.advance(60_000);
  assert.deepEqual(
    s.events.map((e) => e.type),
    ["bound", "expired"],
  );
});
