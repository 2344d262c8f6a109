import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../../agent/src/config/load.js";
import {
  HostDNSConfigController,
  serviceHostDnsAddress,
} from "../../../agent/src/controllers/network/host-dns-config.js";
import { DnsCache } from "../../../agent/src/network/hostdns/cache.js";
import { readQuestion, readReply, servfail } from "../../../agent/src/network/hostdns/message.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../../agent/src/resources/catalog/config.js";
import { HostDNSConfigId, HostDNSConfigType } from "../../../agent/src/resources/catalog/hostdns.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { NETWORK_NAMESPACE, networkDefinitions } from "../../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

const name = (n: string) =>
  Buffer.concat([
    ...n.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0]),
  ]);

function header(id: number, flags: number, counts: [number, number, number, number]): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(id, 0);
  h.writeUInt16BE(flags, 2);
  counts.forEach((c, i) => h.writeUInt16BE(c, 4 + i * 2));
  return h;
}

function rr(type: number, ttl: number, rdata: Buffer): Buffer {
  const fixed = Buffer.alloc(10);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(1, 2);
  fixed.writeUInt32BE(ttl, 4);
  fixed.writeUInt16BE(rdata.length, 8);
  // Owner name as a pointer to the question (offset 12).
  return Buffer.concat([Buffer.from([0xc0, 12]), fixed, rdata]);
}

const question = Buffer.concat([name("Example.ORG"), Buffer.from([0, 1, 0, 1])]);
const aReply = (ttl: number) =>
  Buffer.concat([header(7, 0x8180, [1, 1, 0, 0]), question, rr(1, ttl, Buffer.from([192, 0, 2, 1]))]);

test("DNS messages: the question (lower-cased, compression followed), TTL offsets, SOA minimum of a negative answer, SERVFAIL", () => {
  const q = Buffer.concat([header(9, 0x0100, [1, 0, 0, 0]), question]);
  assert.deepEqual(readQuestion(q), { name: "example.org", type: 1, class: 1 });
  const info = readReply(aReply(300));
  assert.deepEqual(
    { rcode: info.rcode, answers: info.answerCount, ttls: info.ttls.map((t) => t.ttl) },
    { rcode: 0, answers: 1, ttls: [300] },
  );
  const soa = Buffer.concat([
    name("ns.example.org"),
    name("host.example.org"),
    Buffer.from([0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 60]),
  ]);
  const nx = Buffer.concat([header(7, 0x8183, [1, 0, 1, 0]), question, rr(6, 900, soa)]);
  assert.equal(readReply(nx).soaTtl, 60);
  const fail = servfail(q);
  assert.equal(fail.readUInt16BE(0), 9);
  assert.equal(readReply(fail).rcode, 2);
  assert.deepEqual(readQuestion(fail), { name: "example.org", type: 1, class: 1 });
});

test("DNS cache: kept for the smallest TTL (5 s at least, 1 h at most), TTLs lowered on a hit, LRU-bounded; SERVFAIL not kept", () => {
  let now = 0;
  const cache = new DnsCache({ capacity: 2, now: () => now });
  const q = { name: "example.org", type: 1, class: 1 };
  assert.equal(cache.put(q, aReply(30)), true);
  now = 10_500;
  const hit = cache.get(q, 0xabcd)!;
  assert.equal(hit.readUInt16BE(0), 0xabcd);
  assert.equal(readReply(hit).ttls[0]!.ttl, 20);
  now = 30_000;
  assert.equal(cache.get(q, 1), undefined);
  assert.equal(cache.put(q, aReply(1)), true);
  now = 34_999;
  assert.ok(cache.get(q, 1));
  now = 35_000;
  assert.equal(cache.get(q, 1), undefined);
  assert.equal(cache.put(q, servfail(Buffer.concat([header(1, 0x0100, [1, 0, 0, 0]), question]))), false);
  for (const n of ["a.org", "b.org", "c.org"]) cache.put({ name: n, type: 1, class: 1 }, aReply(300));
  assert.equal(cache.size, 2);
  assert.equal(cache.get({ name: "a.org", type: 1, class: 1 }, 1), undefined);
  assert.equal(cache.hits, 2);
});

test("HostDNSConfig: off without a config or hostDNS; forwardKubeDNSToHost adds the service subnet's 10th address", async (t) => {
  assert.equal(serviceHostDnsAddress("10.96.0.0/12"), "10.96.0.9");
  assert.equal(serviceHostDnsAddress("10.0.0.250/24"), "10.0.1.3");
  assert.equal(serviceHostDnsAddress("fd00:10:96::/112"), "fd00:10:96::9");
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  runtime.register(new HostDNSConfigController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const spec = async () => (
    await runtime.whenIdle(), state.get(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec
  );
  assert.deepEqual(await spec(), { enabled: false, listenAddresses: ["127.0.0.53:53"] });
  const config = (features: string) =>
    `version: v1alpha1\nmachine:\n    type: worker\n    features:\n        hostDNS:\n${features}cluster:\n    network:\n        serviceSubnets: [10.112.0.0/12]\n`;
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
    loadConfig(Buffer.from(config("            enabled: true\n            forwardKubeDNSToHost: true\n"))),
  );
  assert.deepEqual(await spec(), {
    enabled: true,
    listenAddresses: ["127.0.0.53:53", "10.112.0.9:53"],
    serviceHostDNSAddress: "10.112.0.9",
  });
});

test("DNS UDP listener: an answer ready after the listener closed is dropped, not thrown (no unhandled rejection)", async (t) => {
  const { HostDnsResolver, listenUdp } = await import("../../../agent/src/network/hostdns/server.js");
  const dgram = await import("node:dgram");
  const rejections: unknown[] = [];
  const onRejection = (err: unknown) => rejections.push(err);
  process.on("unhandledRejection", onRejection);
  t.after(() => process.off("unhandledRejection", onRejection));
  let asked!: () => void;
  const queried = new Promise<void>((r) => (asked = r));
  let answer!: (b: Buffer) => void;
  const answered = new Promise<Buffer>((r) => (answer = r));
  // An upstream that answers only when the test says so.
  class GatedResolver extends HostDnsResolver {
    override resolve(): Promise<Buffer> {
      asked();
      return answered;
    }
  }
  const port = 20000 + (process.pid % 20000);
  const listener = await listenUdp(`127.0.0.1:${port}`, new GatedResolver());
  const client = dgram.createSocket("udp4");
  t.after(() => client.close());
  client.send(Buffer.concat([header(7, 0x0100, [1, 0, 0, 0]), question]), port, "127.0.0.1");
  await queried;
  await listener.close();
  answer(aReply(60));
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  assert.deepEqual(rejections, []);
});
