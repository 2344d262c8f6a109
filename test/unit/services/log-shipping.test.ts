import assert from "node:assert/strict";
import dgram from "node:dgram";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { jsonLinesRecord, shipKernelLog } from "../../../agent/src/services/log-shipping.js";

test("a JSON log line keeps its fields; its time, level and msg become Talos's; a text line is the msg", () => {
  const now = new Date("2026-01-02T03:04:05.000Z");
  assert.deepEqual(
    jsonLinesRecord(
      "apid",
      '{"ts":"2026-01-01T00:00:00.500Z","level":"warning","component":"apid","msg":"slow"}\n',
      { dc: "eu" },
      now,
    ),
    {
      component: "apid",
      msg: "slow",
      "talos-service": "apid",
      "talos-time": "2026-01-01T00:00:00.500Z",
      "talos-level": "warn",
      dc: "eu",
    },
  );
  assert.deepEqual(jsonLinesRecord("machined", "2026/01/02 03:04:05.000000 [basalt] machined: hello\n", {}, now), {
    "talos-service": "machined",
    msg: "2026/01/02 03:04:05.000000 [basalt] machined: hello",
    "talos-time": "2026-01-02T03:04:05.000Z",
    "talos-level": "info",
  });
});

test("talos.logging.kernel: each kernel record goes out as Talos's record", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-kmsg-"));
  const server = dgram.createSocket("udp4");
  t.after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kmsg = path.join(dir, "kmsg");
  writeFileSync(kmsg, "4,42,1500000,-;disk on fire\n");
  await new Promise<void>((resolve) => server.bind(0, "127.0.0.1", resolve));
  const received = new Promise<Record<string, unknown>>((resolve) =>
    server.once("message", (m) => resolve(JSON.parse(m.toString()) as Record<string, unknown>)),
  );
  const ac = new AbortController();
  t.after(() => ac.abort());
  const shipping = shipKernelLog(
    `udp://127.0.0.1:${server.address().port}/`,
    ac.signal,
    kmsg,
    Date.parse("2026-01-01T00:00:00Z"),
  );
  assert.deepEqual(await received, {
    clock: 1500000,
    facility: "kern",
    msg: "disk on fire",
    priority: "warning",
    seq: 42,
    "talos-level": "warn",
    "talos-time": "2026-01-01T00:00:01.500Z",
  });
  ac.abort();
  await shipping;
});

test("a UDP destination without a port (Talos accepts it) fails its sends with one warning; logging goes on", async (t) => {
  const { LogShipper } = await import("../../../agent/src/services/log-shipping.js");
  const { ServiceLogs } = await import("../../../agent/src/services/logs.js");
  const { logger, setLogSink } = await import("../../../agent/src/log.js");
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  t.after(() => setLogSink(previous));
  const logs = new ServiceLogs();
  const shipper = new LogShipper(logs);
  t.after(() => shipper.close());
  shipper.configure([{ endpoint: "udp://127.0.0.1", format: "json_lines" }]);
  // Any later line is shipped too: a machined log line goes through the service log's writer.
  const writer = logs.writer("machined");
  writer.write("first\n");
  writer.write("second\n");
  logger("test").info("still logging");
  assert.equal(lines.filter((l) => l.includes("sending logs failed")).length, 1);
  assert.equal(lines.filter((l) => l.includes("still logging")).length, 1);
});
