import assert from "node:assert/strict";
import { test } from "node:test";
import net from "node:net";
import { logger, setLogSink } from "../../../agent/src/log.js";
import { freePort } from "../../integration/helpers/sandbox.js";
import { TcpLoadBalancer, tierOf, UpstreamList } from "../../../agent/src/network/tcp-load-balancer.js";
import { joinHostPort } from "../../../agent/src/sys/host-port.js";

test("upstreams: round-robin in the lowest tier with a score of at least 0; scores within [-3, 3]; reconcile keeps health", () => {
  const list = new UpstreamList();
  list.reconcile(["a:1", "b:1", "c:1"]);
  // All start at tier 1, score 1: plain round-robin.
  assert.deepEqual([list.pick(), list.pick(), list.pick(), list.pick()], ["a:1", "b:1", "c:1", "a:1"]);
  // One failure leaves b at 0 (still used), two take it below 0 (skipped).
  list.down("b:1");
  assert.deepEqual([list.pick(), list.pick()], ["b:1", "c:1"]);
  list.down("b:1");
  assert.deepEqual([list.pick(), list.pick(), list.pick()], ["a:1", "c:1", "a:1"]);
  // A faster tier wins over round-robin.
  list.up("c:1", 0);
  assert.deepEqual([list.pick(), list.pick()], ["c:1", "c:1"]);
  // Scores saturate: many successes need as many failures as the cap allows, no more.
  for (let i = 0; i < 10; i++) list.up("a:1");
  for (let i = 0; i < 10; i++) list.down("c:1");
  list.up("c:1");
  list.up("c:1");
  assert.equal(list.pick(), "a:1", "c at -3 + 2 = -1 is still skipped");
  list.up("c:1");
  assert.equal(list.pick(), "c:1", "c at 0 is back, in tier 0");
  // Reconcile: kept upstreams keep their health; new ones start fresh; gone ones go.
  list.reconcile(["c:1", "b:1", "d:1"]);
  assert.deepEqual(list.addresses(), ["b:1", "c:1", "d:1"]);
  list.down("c:1");
  assert.equal(list.healthy(), true);
  for (let i = 0; i < 3; i++) ["b:1", "d:1"].forEach((x) => list.down(x));
  assert.equal(list.healthy(), false);
  assert.equal(list.pick(), undefined);
});

test("tiers from probe latency; host:port as Go joins it", () => {
  assert.deepEqual([0.05, 0.5, 5, 50, 500, 5000].map(tierOf), [0, 1, 2, 3, 4, 5]);
  assert.equal(joinHostPort("fd00::1", 6443), "[fd00::1]:6443");
  assert.equal(joinHostPort("10.0.0.1", 6443), "10.0.0.1:6443");
});

test("a connection with no upstream is closed; the warning is kept out of a logger that keeps only errors", async (t) => {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  t.after(() => setLogSink(previous));
  const timings = { dialTimeoutMs: 1000, keepAliveMs: 1000, healthCheckIntervalMs: 60_000, healthCheckTimeoutMs: 1000 };
  const refuseOne = async (log?: ReturnType<typeof logger>) => {
    const port = await freePort();
    const balancer = new TcpLoadBalancer(`127.0.0.1:${port}`, { ...timings, log });
    await balancer.start();
    t.after(() => balancer.close());
    const conn = net.connect(port, "127.0.0.1");
    await new Promise((resolve) => conn.once("close", resolve));
  };
  await refuseOne(logger("quiet").atLeast("error"));
  assert.deepEqual(lines, []);
  await refuseOne();
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /"component":"loadbalancer","msg":"no upstreams available, closing connection"/);
});
