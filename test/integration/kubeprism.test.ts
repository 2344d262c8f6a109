// KubePrism against real TCP upstreams on loopback: connections pass through to live upstreams,
// a dead upstream is skipped once its probes fail, KubePrismStatuses follows health.
import assert from "node:assert/strict";
import net from "node:net";
import { test, type TestContext } from "node:test";
import { KubePrismController } from "../../agent/src/controllers/k8s/kubeprism.js";
import {
  K8S_NAMESPACE,
  KubePrismConfigId,
  KubePrismConfigType,
  KubePrismStatusesId,
  KubePrismStatusesType,
  type KubePrismConfigSpec,
  type KubePrismStatusesSpec,
} from "../../agent/src/resources/catalog/k8s-kubelet.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";

const timings = {
  dialTimeoutMs: 1000,
  keepAliveMs: 1000,
  healthCheckIntervalMs: 50,
  healthCheckTimeoutMs: 500,
  statusIntervalMs: 50,
};

/** An upstream that answers each connection with its name and closes. */
async function upstream(t: TestContext, name: string, port = 0): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    // Health probes connect and hang up at once: their reset is expected.
    s.on("error", () => s.destroy());
    s.end(name);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  t.after(close);
  return { port: (server.address() as net.AddressInfo).port, close };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** What one connection through the balancer reads before it closes ("" when closed at once). */
function request(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port });
    let data = "";
    s.on("data", (d) => (data += d.toString()));
    s.on("close", () => resolve(data));
    // A connection the balancer drops (no upstream, or a failed dial) may arrive as a reset.
    s.on("error", (err: NodeJS.ErrnoException) => (err.code === "ECONNRESET" ? resolve("") : reject(err)));
  });
}

async function until<T>(what: string, get: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  return assert.fail(`timed out waiting for ${what}`);
}

async function untilAsync<T>(what: string, get: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  return assert.fail(`timed out waiting for ${what}`);
}

test("KubePrism: traffic passes, a dead upstream is skipped, the status follows health", async (t) => {
  const a = await upstream(t, "a");
  const b = await upstream(t, "b");
  const dead = await freePort();
  const listen = await freePort();

  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new KubePrismController(timings));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);

  const status = () =>
    state.get<KubePrismStatusesSpec>(K8S_NAMESPACE, KubePrismStatusesType, KubePrismStatusesId)?.spec;
  const statusIs = (healthy: boolean) =>
    until(`healthy=${healthy}`, () => (status()?.healthy === healthy ? status() : undefined));
  const config: KubePrismConfigSpec = {
    host: "127.0.0.1",
    port: listen,
    endpoints: [
      { host: "127.0.0.1", port: a.port },
      { host: "127.0.0.1", port: dead },
      { host: "127.0.0.1", port: b.port },
    ],
  };
  state.modify(K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId, "test.KubePrismConfig", () => config);
  assert.deepEqual(await statusIs(true), { host: `127.0.0.1:${listen}`, healthy: true });

  // Two failed probes (or dials) take the dead upstream's score below 0: wait until a full
  // round-robin turn answers, then every connection must reach a or b.
  const turn = async () => [await request(listen), await request(listen), await request(listen)];
  await untilAsync("the dead upstream skipped", async () => ((await turn()).every((x) => x !== "") ? true : undefined));
  const answers: string[] = [];
  for (let i = 0; i < 8; i++) answers.push(await request(listen));
  // Which of the two answers depends on their probe latency tiers (the faster tier takes every
  // connection, as in go-loadbalancer); the round-robin itself is unit-tested on UpstreamList.
  assert.ok(
    answers.every((x) => x === "a" || x === "b"),
    `answers ${answers.join(",")}`,
  );

  // Every upstream down: unhealthy, and a connection is closed without an answer.
  await a.close();
  await b.close();
  await statusIs(false);
  assert.equal(await request(listen), "");

  // One comes back on its port: healthy again, and it answers.
  await upstream(t, "a2", a.port);
  await statusIs(true);
  assert.equal(await request(listen), "a2");

  // Config gone: the status goes and the port is closed.
  state.destroy(K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId, { owner: "test.KubePrismConfig" });
  await until("status destroyed", () => (status() === undefined ? true : undefined));
  await assert.rejects(request(listen), /ECONNREFUSED/);
});
