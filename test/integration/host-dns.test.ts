// The host DNS cache end to end: dnsmasq in a network namespace serves a name; the
// host DNS controllers (HostDNSConfig from a config with machine.features.hostDNS,
// DNSResolveCache) listen on a loopback port with that dnsmasq as their resolver
// (the ResolverStatus networking would publish). A query over UDP is answered from
// dnsmasq, the same query after dnsmasq is gone from the cache (TTL lowered, not
// raised), and one over TCP as well; an unknown name gets SERVFAIL.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { loadConfig } from "../../agent/src/config/load.js";
import { DNSResolveCacheController } from "../../agent/src/controllers/network/dns-resolve-cache.js";
import { HostDNSConfigController } from "../../agent/src/controllers/network/host-dns-config.js";
import { frame } from "../../agent/src/network/hostdns/forward.js";
import { readReply } from "../../agent/src/network/hostdns/message.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../agent/src/resources/catalog/config.js";
import { DNSResolveCacheType, HostDNSConfigId, HostDNSConfigType } from "../../agent/src/resources/catalog/hostdns.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  ResolverStatusId,
  ResolverStatusType,
} from "../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { freePort, stopProcess } from "./helpers/sandbox.js";

const SUBNET = freeSubnet("10.214", 62);
const DNS = `${SUBNET}.1`;
const HOST = `${SUBNET}.254`;
const tag = randomBytes(3).toString("hex");
const bridge = `thb${tag}`;
const ns = `th-dns-${tag}`;
const skip = canRunNetns();
let root = "";
let dnsmasq: ChildProcess | undefined;

before(() => {
  if (skip) return;
  root = mkdtempSync(path.join(os.tmpdir(), "basalt-hostdns-"));
  ip("link", "add", bridge, "type", "bridge");
  ip("addr", "add", `${HOST}/24`, "dev", bridge);
  ip("link", "set", bridge, "up");
  ip("netns", "add", ns);
  ip("-n", ns, "link", "set", "lo", "up");
  ip("link", "add", `thv${tag}`, "type", "veth", "peer", "name", "eth0", "netns", ns);
  ip("link", "set", `thv${tag}`, "master", bridge, "up");
  ip("-n", ns, "addr", "add", `${DNS}/24`, "dev", "eth0");
  ip("-n", ns, "link", "set", "eth0", "up");
  dnsmasq = spawn(
    "ip",
    [
      "netns",
      "exec",
      ns,
      "dnsmasq",
      "-k",
      "--no-resolv",
      "--no-hosts",
      "--bind-interfaces",
      `--listen-address=${DNS}`,
      "--port=53",
      "--host-record=cached.basalt.test,10.1.2.3",
      "--local-ttl=300",
      "--log-queries",
      `--pid-file=${root}/dnsmasq.pid`,
      "--log-facility=-",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  process.once("exit", () => dnsmasq?.kill("SIGKILL"));
});

after(async () => {
  if (dnsmasq) await stopProcess(dnsmasq);
  if (skip) return;
  execFileSync("ip", ["netns", "del", ns], { stdio: "ignore" });
  execFileSync("ip", ["link", "del", bridge], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

function query(name: string, id: number): Buffer {
  const labels = name.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2); // RD
  header.writeUInt16BE(1, 4);
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]); // A, IN
}

function askUdp(port: number, q: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket("udp4");
    const timer = setTimeout(() => (s.close(), reject(new Error("no UDP answer"))), 10_000);
    s.on("message", (m) => (clearTimeout(timer), s.close(), resolve(m)));
    s.send(q, port, "127.0.0.1");
  });
}

function askTcp(port: number, q: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const c = net.connect({ host: "127.0.0.1", port }, () => c.write(frame(q)));
    let buf = Buffer.alloc(0);
    c.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        c.destroy();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    c.on("error", reject);
  });
}

/** The A record's address and TTL of a one-answer reply. */
function answerA(reply: Buffer): { address: string; ttl: number } {
  const info = readReply(reply);
  assert.equal(info.rcode, 0);
  assert.equal(info.answerCount, 1);
  return { address: [...reply.subarray(reply.length - 4)].join("."), ttl: info.ttls[0]!.ttl };
}

test("host DNS cache: answers from dnsmasq over UDP, then from its cache with dnsmasq gone, over TCP too; SERVFAIL when nothing answers", {
  skip,
  timeout: 60_000,
}, async (t) => {
  const port = await freePort();
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const cache = new DNSResolveCacheController();
  runtime.register(new HostDNSConfigController(`127.0.0.1:${port}`));
  runtime.register(cache);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  state.modify(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId, "network.ResolverSpecController", () => ({
    dnsServers: [DNS],
  }));
  const config =
    "version: v1alpha1\nmachine:\n    type: worker\n    features:\n        hostDNS:\n            enabled: true\ncluster: {}\n";
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
    loadConfig(Buffer.from(config)),
  );
  await runtime.whenIdle();
  assert.deepEqual(state.get(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec, {
    enabled: true,
    listenAddresses: [`127.0.0.1:${port}`],
  });
  assert.deepEqual(
    state.list(NETWORK_NAMESPACE, DNSResolveCacheType).map((r) => [r.metadata.id, r.spec]),
    [
      [`tcp-127.0.0.1:${port}`, { status: "running" }],
      [`udp-127.0.0.1:${port}`, { status: "running" }],
    ],
  );

  const first = await askUdp(port, query("cached.basalt.test", 0x1111));
  assert.equal(first.readUInt16BE(0), 0x1111);
  assert.deepEqual(answerA(first), { address: "10.1.2.3", ttl: 300 });
  assert.equal(cache.resolver.cache.size, 1);

  // dnsmasq is gone: the same question is answered from the cache, with the query's id.
  await stopProcess(dnsmasq!);
  dnsmasq = undefined;
  const again = await askUdp(port, query("cached.basalt.test", 0x2222));
  assert.equal(again.readUInt16BE(0), 0x2222);
  const cached = answerA(again);
  assert.equal(cached.address, "10.1.2.3");
  assert.ok(cached.ttl <= 300, `${cached.ttl}`);
  const overTcp = await askTcp(port, query("CACHED.basalt.test", 0x3333));
  assert.equal(overTcp.readUInt16BE(0), 0x3333);
  assert.equal(answerA(overTcp).address, "10.1.2.3");
  assert.equal(cache.resolver.cache.hits, 2);

  // Not cached and no upstream answers: SERVFAIL.
  const failed = await askTcp(port, query("other.basalt.test", 0x4444));
  assert.equal(readReply(failed).rcode, 2);

  // Disabled by the config: listeners closed, no DNSResolveCache left.
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
    loadConfig(Buffer.from(config.replace("enabled: true", "enabled: false"))),
  );
  await runtime.whenIdle();
  assert.deepEqual(state.list(NETWORK_NAMESPACE, DNSResolveCacheType), []);
  await assert.rejects(askTcp(port, query("cached.basalt.test", 0x5555)), /ECONNREFUSED/);
});
