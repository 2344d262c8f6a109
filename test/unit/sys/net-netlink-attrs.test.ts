// The IFLA_LINKINFO bytes the rtnetlink adapter builds for kinds the package leaves raw
// (this machine's kernel has no vlan or bond driver to accept them; the image's has).

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decodeBondInfoData,
  decodeBridgeInfoData,
  ipText,
  linkInfo,
  parseAttrs,
} from "../../../agent/src/sys/net-netlink.js";
import type { BondOptions } from "../../../agent/src/sys/net.js";

test("vlan: kind, then INFO_DATA with IFLA_VLAN_ID (u16) and IFLA_VLAN_PROTOCOL (big-endian)", () => {
  const b = linkInfo({ kind: "vlan", name: "eth0.100", parentName: "eth0", vlanId: 100 }, () => undefined);
  assert.equal(
    b.toString("hex"),
    [
      "0900",
      "0100",
      "766c616e00",
      "000000", // IFLA_INFO_KIND "vlan\0" padded
      "1400",
      "0200", // IFLA_INFO_DATA, 20 bytes
      "0600",
      "0100",
      "6400",
      "0000", // IFLA_VLAN_ID 100
      "0600",
      "0500",
      "8100",
      "0000", // IFLA_VLAN_PROTOCOL 802.1Q
    ].join(""),
  );
});

// One attribute written out by hand: length and type (u16 little-endian), payload, zero padding to 4.
function attr(type: number, payloadHex: string): string {
  const len = 4 + payloadHex.length / 2;
  const le16 = (v: number) => Buffer.from([v & 0xff, v >> 8]).toString("hex");
  return le16(len) + le16(type) + payloadHex + "00".repeat(((len + 3) & ~3) - len);
}

// Every option set to a distinct value, so a wrong type number, width or value shows.
const options: Omit<BondOptions, "mode"> = {
  xmitHashPolicy: 1,
  lacpRate: 1,
  arpValidate: 2,
  arpAllTargets: 1,
  primary: "eth1",
  primaryReselect: 2,
  failOverMac: 1,
  adSelect: 2,
  miimon: 100,
  updelay: 200,
  downdelay: 300,
  arpInterval: 0,
  resendIgmp: 2,
  minLinks: 1,
  lpInterval: 4,
  packetsPerSlave: 3,
  numPeerNotif: 5,
  tlbDynamicLb: 1,
  allSlavesActive: 1,
  useCarrier: true,
  adActorSysPrio: 0x1234,
  adUserPortKey: 0x56,
  peerNotifyDelay: 400,
};
// The IFLA_BOND_* attributes (type, payload) Talos v1.7's encoder writes for those options, by name.
const wire: Record<string, string> = {
  xmit: attr(14, "01"),
  lacpRate: attr(21, "01"),
  arpValidate: attr(9, "02000000"),
  arpAllTargets: attr(10, "01000000"),
  primary: attr(11, "07000000"),
  primaryReselect: attr(12, "02"),
  failOverMac: attr(13, "01"),
  adSelect: attr(22, "02"),
  miimon: attr(3, "64000000"),
  updelay: attr(4, "c8000000"),
  downdelay: attr(5, "2c010000"),
  arpInterval: attr(7, "00000000"),
  resendIgmp: attr(15, "02000000"),
  minLinks: attr(18, "01000000"),
  lpInterval: attr(19, "04000000"),
  packetsPerSlave: attr(20, "03000000"),
  numPeerNotif: attr(16, "05"),
  tlbDynamicLb: attr(27, "01"),
  allSlavesActive: attr(17, "01"),
  useCarrier: attr(6, "01"),
  adActorSysPrio: attr(24, "3412"),
  adUserPortKey: attr(25, "5600"),
  peerNotifyDelay: attr(28, "90010000"),
};
const bondData = (o: BondOptions): string =>
  parseAttrs(linkInfo({ kind: "bond", name: "bond0", bond: o }, (n) => (n === "eth1" ? 7 : undefined)))
    .get(2)!
    .toString("hex");
const expected = (mode: number, names: string[]): string =>
  attr(1, mode.toString(16).padStart(2, "0")) + names.map((n) => wire[n]!).join("");

test("bond: the attributes sent per mode are Talos's, in its order; the kernel refuses the others for the mode", () => {
  const cases: Array<[string, number, string[]]> = [
    [
      "balance-rr",
      0,
      [
        "xmit",
        "arpValidate",
        "arpAllTargets",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "arpInterval",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "packetsPerSlave",
        "numPeerNotif",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
    [
      "active-backup",
      1,
      [
        "xmit",
        "arpValidate",
        "arpAllTargets",
        "primary",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "arpInterval",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
    [
      "balance-xor",
      2,
      [
        "xmit",
        "arpValidate",
        "arpAllTargets",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "arpInterval",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
    [
      "broadcast",
      3,
      [
        "xmit",
        "arpValidate",
        "arpAllTargets",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "arpInterval",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
    [
      "802.3ad",
      4,
      [
        "xmit",
        "lacpRate",
        "arpAllTargets",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "allSlavesActive",
        "useCarrier",
        "adActorSysPrio",
        "adUserPortKey",
        "peerNotifyDelay",
      ],
    ],
    [
      "balance-tlb",
      5,
      [
        "xmit",
        "arpAllTargets",
        "primary",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "tlbDynamicLb",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
    [
      "balance-alb",
      6,
      [
        "xmit",
        "arpAllTargets",
        "primary",
        "primaryReselect",
        "failOverMac",
        "adSelect",
        "miimon",
        "updelay",
        "downdelay",
        "resendIgmp",
        "minLinks",
        "lpInterval",
        "numPeerNotif",
        "tlbDynamicLb",
        "allSlavesActive",
        "useCarrier",
        "peerNotifyDelay",
      ],
    ],
  ];
  for (const [name, mode, names] of cases) assert.equal(bondData({ mode, ...options }), expected(mode, names), name);
});

test("bond: without MII monitoring no updelay, downdelay or peer_notif_delay; a primary not found is index 0", () => {
  assert.equal(
    bondData({ ...options, mode: 1, miimon: 0, primary: "gone" }),
    [
      "0500",
      "0100",
      "01",
      "000000", // IFLA_BOND_MODE active-backup
      "0500",
      "0e00",
      "01",
      "000000", // XMIT_HASH_POLICY layer3+4
      "0800",
      "0900",
      "02000000", // ARP_VALIDATE backup
      "0800",
      "0a00",
      "01000000", // ARP_ALL_TARGETS all
      "0800",
      "0b00",
      "00000000", // PRIMARY: none
      "0500",
      "0c00",
      "02",
      "000000", // PRIMARY_RESELECT failure
      "0500",
      "0d00",
      "01",
      "000000", // FAIL_OVER_MAC active
      "0500",
      "1600",
      "02",
      "000000", // AD_SELECT count
      "0800",
      "0300",
      "00000000", // MIIMON 0
      "0800",
      "0700",
      "00000000", // ARP_INTERVAL 0
      "0800",
      "0f00",
      "02000000", // RESEND_IGMP
      "0800",
      "1200",
      "01000000", // MIN_LINKS
      "0800",
      "1300",
      "04000000", // LP_INTERVAL
      "0500",
      "1000",
      "05",
      "000000", // NUM_PEER_NOTIF
      "0500",
      "1100",
      "01",
      "000000", // ALL_SLAVES_ACTIVE
      "0500",
      "0600",
      "01",
      "000000", // USE_CARRIER
    ].join(""),
  );
});

test("bond: the kernel's report decodes back to the options (its primary index named), attributes we never send skipped", () => {
  const sent = Buffer.from(bondData({ mode: 4, ...options }), "hex");
  // What the kernel adds to its report: ARP_IP_TARGET (nested, empty), AD_INFO (nested), AD_ACTOR_SYSTEM (MAC), AD_LACP_ACTIVE, MISSED_MAX; and a primary.
  const extra = Buffer.from(
    attr(8, "") +
      attr(23, attr(1, "0100")) +
      attr(26, "020000000001") +
      attr(29, "01") +
      attr(30, "02") +
      attr(11, "07000000"),
    "hex",
  );
  const names = new Map([[7, "eth1"]]);
  assert.deepEqual(
    decodeBondInfoData(Buffer.concat([sent, extra]), (i) => names.get(i)),
    {
      mode: 4,
      ...options,
      arpValidate: 0,
      arpInterval: 0,
      packetsPerSlave: 0,
      tlbDynamicLb: 0,
      primary: "eth1",
    },
  );
  // A primary index that names no link is no primary.
  assert.equal(decodeBondInfoData(Buffer.from(attr(11, "09000000"), "hex"), () => undefined).primary, undefined);
});

test("bridge: STP on whether the kernel or user space runs it", () => {
  assert.deepEqual(decodeBridgeInfoData(Buffer.from(attr(5, "02000000") + attr(7, "01"), "hex")), {
    stp: true,
    vlanFiltering: true,
  });
  assert.deepEqual(decodeBridgeInfoData(Buffer.from(attr(5, "00000000"), "hex")), { stp: false, vlanFiltering: false });
});

test("dummy and bridge", () => {
  assert.equal(
    linkInfo({ kind: "dummy", name: "d0" }, () => undefined).toString("hex"),
    "0a000100" + Buffer.from("dummy\0").toString("hex") + "0000",
  );
  const br = parseAttrs(
    parseAttrs(
      linkInfo({ kind: "bridge", name: "br0", bridge: { stp: true, vlanFiltering: false } }, () => undefined),
    ).get(2)!,
  );
  assert.equal(br.get(5)!.readUInt32LE(0), 1);
  assert.equal(br.get(7)!.readUInt8(0), 0);
});

test("ipText: RFC 5952 IPv6 and dotted IPv4", () => {
  assert.equal(ipText(Buffer.from("fe800000000000000000000000000001", "hex")), "fe80::1");
  assert.equal(ipText(Buffer.from("20010db8000000010000000000000000", "hex")), "2001:db8:0:1::");
  assert.equal(ipText(Buffer.from("20010db8000100020003000400050006", "hex")), "2001:db8:1:2:3:4:5:6");
  assert.equal(ipText(Buffer.from([10, 1, 2, 3])), "10.1.2.3");
});
