import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";
import { pollUntilReady, tcpProbe } from "../../../agent/src/services/readiness.js";

test("a slow start is waited for: readiness polling has no attempt cap (apid took > 200 probes under load)", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let probes = 0;
  const probe = async () => {
    probes++;
    if (probes <= 1000) throw new Error("not listening yet");
  };
  const ac = new AbortController();
  const ready = pollUntilReady(probe, ac.signal, 100);
  let settled = false;
  void ready.finally(() => (settled = true));
  for (let i = 0; i < 1000 && !settled; i++) {
    await new Promise((r) => setImmediate(r));
    t.mock.timers.tick(100);
  }
  await ready;
  assert.equal(probes, 1001);
});

test("the readiness wait ends when its signal aborts (the service exited or is stopped), with the last probe error", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const ac = new AbortController();
  const ready = pollUntilReady(
    async () => {
      throw new Error("not listening yet");
    },
    ac.signal,
    100,
  );
  await new Promise((r) => setImmediate(r));
  ac.abort();
  await assert.rejects(ready, /not listening yet/);
});

test("tcpProbe resolves for a listening port and names the service when nothing listens", async () => {
  const server = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await tcpProbe(`127.0.0.1:${port}`, "apid");
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await assert.rejects(tcpProbe(`127.0.0.1:${port}`, "apid"), new RegExp(`apid is not listening on 127.0.0.1:${port}`));
});
