import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BOOTREPLY,
  type DhcpMessage,
  MessageType,
  Option,
  decodeClasslessRoutes,
  decodeMessage,
  encodeClasslessRoutes,
  encodeMessage,
  ipToBuffer,
  maskToPrefixLen,
  parseOptions,
  prefixLenToMask,
  u16Buffer,
  u32Buffer,
} from "../../../agent/src/network/dhcp4/packet.js";

function ack(): DhcpMessage {
  const options = new Map<number, Buffer>([
    [Option.MessageType, Buffer.from([MessageType.Ack])],
    [Option.ServerIdentifier, ipToBuffer("192.0.2.1")],
    [Option.SubnetMask, ipToBuffer("255.255.255.0")],
    [Option.Router, Buffer.concat([ipToBuffer("192.0.2.1"), ipToBuffer("192.0.2.254")])],
    [Option.DomainNameServer, Buffer.concat([ipToBuffer("192.0.2.53"), ipToBuffer("192.0.2.54")])],
    [Option.NTPServers, ipToBuffer("192.0.2.123")],
    [Option.HostName, Buffer.from("node-1")],
    [Option.DomainName, Buffer.from("example.test\0")],
    [Option.LeaseTime, u32Buffer(3600)],
    [Option.RenewalTime, u32Buffer(1800)],
    [Option.RebindingTime, u32Buffer(3150)],
    [Option.InterfaceMTU, u16Buffer(1450)],
    [
      Option.ClasslessStaticRoute,
      encodeClasslessRoutes([
        { dst: "10.0.0.0", dstLen: 8, gateway: "192.0.2.9" },
        { dst: "0.0.0.0", dstLen: 0, gateway: "192.0.2.1" },
      ]),
    ],
  ]);
  return {
    op: BOOTREPLY,
    xid: 0xdeadbeef,
    secs: 3,
    flags: 0x8000,
    ciaddr: "0.0.0.0",
    yiaddr: "192.0.2.10",
    siaddr: "0.0.0.0",
    giaddr: "0.0.0.0",
    chaddr: "02:00:00:aa:bb:cc",
    options,
  };
}

test("encode/decode round-trips the header and options", () => {
  const m = ack();
  const buf = encodeMessage(m);
  assert.ok(buf.length >= 300, "padded to BOOTP minimum");
  assert.equal(buf.readUInt32BE(236), 0x63825363);
  const back = decodeMessage(buf);
  assert.equal(back.xid, 0xdeadbeef);
  assert.equal(back.flags, 0x8000);
  assert.equal(back.yiaddr, "192.0.2.10");
  assert.equal(back.chaddr, "02:00:00:aa:bb:cc");
  assert.deepEqual(
    [...back.options.keys()].sort((a, b) => a - b),
    [...m.options.keys()].sort((a, b) => a - b),
  );
});

test("parseOptions decodes every lease field", () => {
  const p = parseOptions(decodeMessage(encodeMessage(ack())).options);
  assert.equal(p.messageType, MessageType.Ack);
  assert.equal(p.serverId, "192.0.2.1");
  assert.equal(p.subnetMask, "255.255.255.0");
  assert.deepEqual(p.routers, ["192.0.2.1", "192.0.2.254"]);
  assert.deepEqual(p.dnsServers, ["192.0.2.53", "192.0.2.54"]);
  assert.deepEqual(p.ntpServers, ["192.0.2.123"]);
  assert.equal(p.hostname, "node-1");
  assert.equal(p.domainName, "example.test", "trailing NUL stripped");
  assert.equal(p.leaseTime, 3600);
  assert.equal(p.renewalTime, 1800);
  assert.equal(p.rebindingTime, 3150);
  assert.equal(p.mtu, 1450);
  assert.deepEqual(p.classlessRoutes, [
    { dst: "10.0.0.0", dstLen: 8, gateway: "192.0.2.9" },
    { dst: "0.0.0.0", dstLen: 0, gateway: "192.0.2.1" },
  ]);
});

test("classless static routes use only the significant destination octets (RFC 3442)", () => {
  const enc = encodeClasslessRoutes([{ dst: "172.16.32.0", dstLen: 20, gateway: "10.0.0.1" }]);
  assert.deepEqual([...enc], [20, 172, 16, 32, 10, 0, 0, 1]);
  assert.deepEqual(decodeClasslessRoutes(Buffer.from([24, 192, 168, 5, 10, 0, 0, 2])), [
    { dst: "192.168.5.0", dstLen: 24, gateway: "10.0.0.2" },
  ]);
  assert.throws(() => decodeClasslessRoutes(Buffer.from([24, 192, 168])), /truncated/);
  assert.throws(() => decodeClasslessRoutes(Buffer.from([33, 1, 2, 3, 4, 5, 6, 7, 8])), /prefix length 33/);
});

test("long options are split and re-joined (RFC 3396)", () => {
  const m = ack();
  const long = Buffer.alloc(600, 7);
  m.options.set(Option.DomainSearch, long);
  const back = decodeMessage(encodeMessage(m));
  assert.equal(back.options.get(Option.DomainSearch)!.length, 600);
});

test("options overloaded into the file field are read", () => {
  const buf = encodeMessage(ack());
  // Move the hostname into the 'file' area and announce it with option 52 = 1.
  const withOverload = Buffer.from(buf);
  const opts = Buffer.from([Option.Overload, 1, 1, 255]);
  opts.copy(withOverload, 240);
  Buffer.from([Option.HostName, 3, 0x61, 0x62, 0x63, 255]).copy(withOverload, 108);
  const back = decodeMessage(withOverload);
  assert.equal(parseOptions(back.options).hostname, "abc");
});

test("malformed packets are rejected", () => {
  assert.throws(() => decodeMessage(Buffer.alloc(100)), /too short/);
  const bad = encodeMessage(ack());
  bad.writeUInt32BE(0, 236);
  assert.throws(() => decodeMessage(bad), /magic cookie/);
  const overrun = encodeMessage(ack());
  overrun[240] = Option.HostName;
  overrun[241] = 250;
  assert.throws(() => decodeMessage(overrun.subarray(0, 260)), /overruns/);
});

test("subnet masks convert to prefix lengths and back", () => {
  assert.equal(maskToPrefixLen("255.255.255.0"), 24);
  assert.equal(maskToPrefixLen("255.255.240.0"), 20);
  assert.equal(maskToPrefixLen("255.255.255.255"), 32);
  assert.equal(maskToPrefixLen("0.0.0.0"), 0);
  assert.throws(() => maskToPrefixLen("255.0.255.0"), /non-contiguous/);
  assert.equal(prefixLenToMask(22), "255.255.252.0");
});

test("IPv4 text is parsed strictly: empty, padded, hex and out-of-range octets are refused", async () => {
  const { ipv4ToInt, ipv4Network } = await import("../../../agent/src/sys/net.js");
  assert.equal(ipv4ToInt("10.0.0.1"), 0x0a000001);
  assert.equal(ipv4Network("10.1.2.3", 0), "0.0.0.0");
  for (const bad of ["10..0.1", "10.0.0.", " 10.0.0.1", "0x10.0.0.1", "10.0.0.256", "10.0.0", "1e1.0.0.1"]) {
    assert.throws(() => ipToBuffer(bad), /not an IPv4 address/, bad);
  }
});
