import assert from "node:assert/strict";
import { test } from "node:test";
import { ipv6Text } from "../../../agent/src/sys/ip-text.js";
import {
  decodeDomainNames,
  decodeIaNa,
  decodeMessage,
  decodeNtpServers,
  duidLL,
  encodeIaNa,
  encodeMessage,
  encodeOptions,
  ipv6Bytes,
  MessageType,
  Option,
} from "../../../agent/src/network/dhcp6/packet.js";

test("DHCPv6 message: type and 24-bit transaction id, options in order", () => {
  const buf = encodeMessage({
    type: MessageType.Solicit,
    transactionId: 0xabcdef,
    options: [
      [Option.ClientId, duidLL("02:00:00:00:00:01")],
      [Option.RapidCommit, Buffer.alloc(0)],
    ],
  });
  assert.equal(buf.toString("hex"), "01abcdef" + "0001000a" + "00030001020000000001" + "000e0000");
  assert.deepEqual(decodeMessage(buf), {
    type: 1,
    transactionId: 0xabcdef,
    options: [
      [1, duidLL("02:00:00:00:00:01")],
      [14, Buffer.alloc(0)],
    ],
  });
  assert.throws(() => decodeMessage(Buffer.from("0100000000010005", "hex")), /truncated/);
});

test("IA_NA round trip; an address whose status is not Success is left out", () => {
  const ia = encodeIaNa(7, [{ address: "fd00::1:2", preferredLifetime: 120, validLifetime: 240 }], 60, 105);
  assert.deepEqual(decodeIaNa(ia), {
    iaid: 7,
    t1: 60,
    t2: 105,
    addresses: [{ address: "fd00::1:2", preferredLifetime: 120, validLifetime: 240 }],
  });
  const refused = Buffer.concat([
    ia.subarray(0, 12),
    encodeOptions([
      [
        Option.IaAddr,
        Buffer.concat([ia.subarray(16, 40), encodeOptions([[Option.StatusCode, Buffer.from("0002", "hex")]])]),
      ],
    ]),
  ]);
  assert.deepEqual(decodeIaNa(refused).addresses, []);
});

test("domain lists, NTP server suboptions (address and name), IPv6 text as RFC 5952", () => {
  assert.deepEqual(decodeDomainNames(Buffer.from("076578616d706c65036f726700036c616e00", "hex")), [
    "example.org",
    "lan",
  ]);
  const ntp = encodeOptions([
    [1, ipv6Bytes("2001:db8::123")],
    [3, Buffer.from("036e7470036c616e00", "hex")],
  ]);
  assert.deepEqual(decodeNtpServers(ntp), ["2001:db8::123", "ntp.lan"]);
  assert.equal(ipv6Text(ipv6Bytes("2001:db8:0:0:1:0:0:1")), "2001:db8::1:0:0:1");
  assert.equal(ipv6Text(ipv6Bytes("::")), "::");
});
