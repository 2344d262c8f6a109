// PacketCapture through the real API (the sandbox's apid over mutual TLS, machined's packet socket and reader)
// on one end of a veth pair whose other end is in a network namespace of its own. That end sends UDP datagrams
// of known bytes to a neighbour that does not exist (a static entry), so the host end sees exactly those frames
// and nothing answers them (IPv6 is off on both ends: no router or neighbour solicitations either). Each record
// is compared with the frame as the sender built it; only the IPv4 id and header checksum are the kernel's.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { canRunNetns, ip } from "./helpers/netns.js";
import { startCapture } from "./helpers/pcap-stream.js";
import { startConfiguredSandbox, type ConfiguredSandbox } from "./helpers/configured-sandbox.js";
import { eventually } from "./helpers/sandbox.js";

const skip = canRunNetns();
const tag = String(process.pid % 100000);
const ns = `basalt-pcap-${tag}`;
/** The captured end (root namespace) and the sending end (in `ns`). */
const hostEnd = `bpc${tag}h`;
const peerEnd = `bpc${tag}p`;
const senderAddr = "192.0.2.2";
const ghostAddr = "192.0.2.3";
const ghostMac = "02:00:00:00:00:03";
const srcPort = 40000;
const IFF_PROMISC = 0x100;
const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-pcap-"));
let node: ConfiguredSandbox | undefined;
let peerMac: Buffer;

/** Datagrams: to port 5301 (the filter's) and 5302, each payload distinct and of its own length. */
const datagrams = [
  ...[0, 1, 2, 3].map((i) => ({ port: 5301, payload: Buffer.from(`basalt pcap ${i} `.repeat(i + 1)) })),
  ...[0, 1, 2].map((i) => ({ port: 5302, payload: Buffer.alloc(100 + i * 50, 0x41 + i) })),
];

before(async () => {
  if (skip) return;
  ip("netns", "add", ns);
  ip("link", "add", hostEnd, "type", "veth", "peer", "name", peerEnd, "netns", ns);
  execFileSync("sysctl", ["-qw", `net.ipv6.conf.${hostEnd}.disable_ipv6=1`]);
  execFileSync("ip", ["netns", "exec", ns, "sysctl", "-qw", `net.ipv6.conf.${peerEnd}.disable_ipv6=1`]);
  ip("-n", ns, "addr", "add", `${senderAddr}/24`, "dev", peerEnd);
  ip("-n", ns, "neigh", "add", ghostAddr, "lladdr", ghostMac, "dev", peerEnd, "nud", "permanent");
  ip("-n", ns, "link", "set", peerEnd, "up");
  ip("link", "set", hostEnd, "up");
  peerMac = Buffer.from(
    ip("-n", ns, "-o", "link", "show", peerEnd)
      .match(/link\/ether ([0-9a-f:]+)/)![1]!
      .split(":")
      .map((h) => parseInt(h, 16)),
  );
  node = await startConfiguredSandbox({ clusterName: "pcap", stateDir });
  const admin = node.admin;
  await eventually(() => admin.resourceGet("network", "LinkStatuses.net.talos.dev", hostEnd));
});

after(async () => {
  node?.admin.close();
  await node?.sandbox.stop();
  if (!skip) {
    try {
      ip("netns", "del", ns);
    } catch {
      // not created
    }
  }
  rmSync(stateDir, { recursive: true, force: true });
});

/** Sends the datagrams from the namespace's end, in order, from one socket. */
function send(items: typeof datagrams): void {
  const script = `
    const dgram = require("node:dgram");
    const items = JSON.parse(process.argv[1]);
    const s = dgram.createSocket("udp4");
    s.bind(${srcPort}, "${senderAddr}", async () => {
      for (const { port, payload } of items) await new Promise((r, j) => s.send(Buffer.from(payload, "base64"), port, "${ghostAddr}", (e) => (e ? j(e) : r())));
      s.close();
    });`;
  const arg = JSON.stringify(items.map((d) => ({ port: d.port, payload: d.payload.toString("base64") })));
  execFileSync("ip", ["netns", "exec", ns, process.execPath, "-e", script, arg], { stdio: "inherit" });
}

/** The Ethernet frame the sender's kernel builds, IPv4 id and header checksum zeroed. */
function expectedFrame(d: (typeof datagrams)[number]): Buffer {
  const eth = Buffer.concat([
    Buffer.from(ghostMac.split(":").map((h) => parseInt(h, 16))),
    peerMac,
    Buffer.from([0x08, 0x00]),
  ]);
  const ipHeader = Buffer.alloc(20);
  ipHeader.writeUInt8(0x45, 0);
  ipHeader.writeUInt16BE(28 + d.payload.length, 2);
  ipHeader.writeUInt16BE(0x4000, 6); // DF: the kernel's path MTU discovery default
  ipHeader.writeUInt8(64, 8);
  ipHeader.writeUInt8(17, 9);
  Buffer.from(senderAddr.split(".").map(Number)).copy(ipHeader, 12);
  Buffer.from(ghostAddr.split(".").map(Number)).copy(ipHeader, 16);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(srcPort, 0);
  udp.writeUInt16BE(d.port, 2);
  udp.writeUInt16BE(8 + d.payload.length, 4);
  return Buffer.concat([eth, ipHeader, udp, d.payload]);
}

/**
 * The frame with the fields only the sender's kernel fills zeroed: the IPv4 id and header checksum, and the UDP
 * checksum (the veth offloads it, so a capture sees the partial sum).
 */
function comparable(frame: Buffer): Buffer {
  const b = Buffer.from(frame);
  b.fill(0, 18, 20);
  b.fill(0, 24, 26);
  if (b.length >= 42) b.fill(0, 40, 42);
  return b;
}

/** The capture readers machined started that are still running. */
function readers(): number[] {
  const parent = node!.sandbox.child.pid;
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return (
          path.basename(readlinkSync(`/proc/${p}/exe`)) === "packet-capture" &&
          new RegExp(`^PPid:\\s+${parent}$`, "m").test(readFileSync(`/proc/${p}/status`, "utf8"))
        );
      } catch {
        return false; // gone while looking
      }
    })
    .map(Number);
}

const flags = () => parseInt(readFileSync(`/sys/class/net/${hostEnd}/flags`, "utf8"), 16);

test("a promiscuous capture records exactly the frames sent, then its reader and promiscuous mode are gone on cancel", {
  skip,
  timeout: 60_000,
}, async () => {
  assert.equal(flags() & IFF_PROMISC, 0);
  const c = startCapture(node!.admin, { interface: hostEnd, promiscuous: true });
  await c.until(() => c.header() !== undefined);
  // LINKTYPE_ETHERNET, Talos's default snap length 4096.
  assert.equal(c.header()!.toString("hex"), "4d3cb2a10200040000000000000000000010000001000000");
  assert.equal(flags() & IFF_PROMISC, IFF_PROMISC);
  assert.equal(readers().length, 1);
  send(datagrams);
  await c.until(() => c.records.length >= datagrams.length);
  c.stream.cancel();
  assert.equal((await c.ended)?.code, grpc.status.CANCELLED);
  assert.equal(c.records.length, datagrams.length);
  c.records.forEach((r, i) => {
    const want = expectedFrame(datagrams[i]!);
    assert.equal(r.length, want.length, `record ${i}: length`);
    assert.equal(r.data.length, want.length, `record ${i}: whole frame captured`);
    assert.equal(comparable(r.data).toString("hex"), comparable(want).toString("hex"), `record ${i}: bytes`);
  });
  await eventually(async () => assert.deepEqual(readers(), []));
  await eventually(async () => assert.equal(flags() & IFF_PROMISC, 0));
});

test("a BPF filter (IPv4 UDP to port 5301) keeps only its frames, cut to the snap length", {
  skip,
  timeout: 60_000,
}, async () => {
  // ldh [12]; jeq #0x800; ldb [23]; jeq #17; ldh [36]; jeq #5301; ret #262144; ret #0
  const filter = [
    { op: 0x28, jt: 0, jf: 0, k: 12 },
    { op: 0x15, jt: 0, jf: 5, k: 0x800 },
    { op: 0x30, jt: 0, jf: 0, k: 23 },
    { op: 0x15, jt: 0, jf: 3, k: 17 },
    { op: 0x28, jt: 0, jf: 0, k: 36 },
    { op: 0x15, jt: 0, jf: 1, k: 5301 },
    { op: 0x6, jt: 0, jf: 0, k: 0x40000 },
    { op: 0x6, jt: 0, jf: 0, k: 0 },
  ];
  const snap = 50;
  const c = startCapture(node!.admin, { interface: hostEnd, snap_len: snap, bpf_filter: filter });
  await c.until(() => c.header() !== undefined);
  assert.equal(c.header()!.readUInt32LE(16), snap);
  assert.equal(flags() & IFF_PROMISC, 0);
  // Port 5302 first: the veth keeps the order, so once 5301's frames are in, any 5302 frame would be too.
  const kept = datagrams.filter((d) => d.port === 5301);
  send([...datagrams.filter((d) => d.port === 5302), ...kept]);
  await c.until(() => c.records.length >= kept.length);
  c.stream.cancel();
  await c.ended;
  assert.equal(c.records.length, kept.length);
  c.records.forEach((r, i) => {
    const want = expectedFrame(kept[i]!);
    assert.equal(r.length, want.length, `record ${i}: length`);
    assert.equal(r.data.length, Math.min(snap, want.length), `record ${i}: captured`);
    assert.equal(
      comparable(r.data).toString("hex"),
      comparable(want).subarray(0, snap).toString("hex"),
      `record ${i}: bytes`,
    );
  });
  await eventually(async () => assert.deepEqual(readers(), []));
});

test("bad links and a program the kernel refuses are answered with their codes, and leave nothing behind", {
  skip,
  timeout: 60_000,
}, async () => {
  const admin = node!.admin;
  for (const [request, code, details] of [
    [{ interface: "any" }, grpc.status.NOT_FOUND, 'interface "any" not found'],
    [{ interface: "nosuchlink0" }, grpc.status.NOT_FOUND, 'interface "nosuchlink0" not found'],
    // A jump past the end of the program.
    [
      { interface: hostEnd, bpf_filter: [{ op: 0x15, jt: 3, jf: 0, k: 0 }] },
      grpc.status.INVALID_ARGUMENT,
      "the kernel refused the BPF program: error setting BPF filter: EINVAL",
    ],
    [
      { interface: hostEnd, bpf_filter: [{ op: 0x6, jt: 300 }] },
      grpc.status.INVALID_ARGUMENT,
      "error setting BPF filter: instruction 0: jt 300 is over 0xff",
    ],
  ] as const) {
    const err = await startCapture(admin, request).ended;
    assert.equal(err?.code, code, JSON.stringify(request));
    assert.equal(err?.details, details);
  }
  assert.deepEqual(readers(), []);
  assert.equal(flags() & IFF_PROMISC, 0);
});
