// The IFLA_LINKINFO bytes the rtnetlink adapter builds for kinds the package leaves raw
// (this machine's kernel has no vlan or bond driver to accept them; the image's has).

import assert from "node:assert/strict";
import { test } from "node:test";
import { ipText, linkInfo, parseAttrs } from "../../../agent/src/sys/net-netlink.js";

test("vlan: kind, then INFO_DATA with IFLA_VLAN_ID (u16) and IFLA_VLAN_PROTOCOL (big-endian)", () => {
  const b = linkInfo({ kind: "vlan", name: "eth0.100", parentName: "eth0", vlanId: 100 }, () => undefined);
  assert.equal(
    b.toString("hex"),
    [
      "0900", "0100", "766c616e00", "000000", // IFLA_INFO_KIND "vlan\0" padded
      "1400", "0200", // IFLA_INFO_DATA, 20 bytes
      "0600", "0100", "6400", "0000", // IFLA_VLAN_ID 100
      "0600", "0500", "8100", "0000", // IFLA_VLAN_PROTOCOL 802.1Q
    ].join(""),
  );
});

test("bond: mode, miimon, updelay, primary by index, lacp rate, ARP targets nested", () => {
  const b = linkInfo(
    { kind: "bond", name: "bond0", bond: { mode: 1, miimon: 100, updelay: 200, primary: "eth1", lacpRate: 1, arpIpTargets: ["10.0.0.1"] } },
    (n) => (n === "eth1" ? 7 : undefined),
  );
  const top = parseAttrs(b);
  assert.equal(top.get(1)!.toString(), "bond\0");
  const data = parseAttrs(top.get(2)!);
  assert.deepEqual([...data.keys()], [1, 3, 4, 8, 11, 21]);
  assert.equal(data.get(1)!.readUInt8(0), 1);
  assert.equal(data.get(3)!.readUInt32LE(0), 100);
  assert.equal(data.get(4)!.readUInt32LE(0), 200);
  assert.equal(data.get(11)!.readUInt32LE(0), 7);
  assert.equal(data.get(21)!.readUInt8(0), 1);
  assert.equal(ipText(parseAttrs(data.get(8)!).get(0)), "10.0.0.1");
});

test("dummy and bridge", () => {
  assert.equal(linkInfo({ kind: "dummy", name: "d0" }, () => undefined).toString("hex"), "0a000100" + Buffer.from("dummy\0").toString("hex") + "0000");
  const br = parseAttrs(parseAttrs(linkInfo({ kind: "bridge", name: "br0", bridge: { stp: true, vlanFiltering: false } }, () => undefined)).get(2)!);
  assert.equal(br.get(5)!.readUInt32LE(0), 1);
  assert.equal(br.get(7)!.readUInt8(0), 0);
});

test("ipText: RFC 5952 IPv6 and dotted IPv4", () => {
  assert.equal(ipText(Buffer.from("fe800000000000000000000000000001", "hex")), "fe80::1");
  assert.equal(ipText(Buffer.from("20010db8000000010000000000000000", "hex")), "2001:db8:0:1::");
  assert.equal(ipText(Buffer.from("20010db8000100020003000400050006", "hex")), "2001:db8:1:2:3:4:5:6");
  assert.equal(ipText(Buffer.from([10, 1, 2, 3])), "10.1.2.3");
});
