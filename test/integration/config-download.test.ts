// talos.config=<url> against a real HTTP server: the URL's variables filled from the
// machine's resources, 503s retried until the server answers, a gzip body unpacked; a 404
// is final and leaves a ConfigLoadErrorEvent (the node would stay in maintenance mode).
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { after, before, test } from "node:test";
import { decode } from "../../agent/src/api/index.js";
import { configChecker } from "../../agent/src/cmd/wiring.js";
import { fakeBlockSysfs } from "../../agent/src/sys/block.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { networkDefinitions } from "../../agent/src/controllers/network/index.js";
import { logger } from "../../agent/src/log.js";
import { EventBus } from "../../agent/src/machined/events.js";
import { configFromPlatform } from "../../agent/src/machined/platform-config.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import { HostnameStatusId, HostnameStatusType, LinkStatusType } from "../../agent/src/resources/catalog/network.js";
import type { PlatformMetadataSpec } from "../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const uuid = "5b3f2a10-1111-4222-8333-444455556666";
let worker = "";
const requests: string[] = [];
let answers: ((res: http.ServerResponse) => void)[] = [];
const server = http.createServer((req, res) => {
  requests.push(req.url ?? "");
  const answer = answers.shift() ?? ((r: http.ServerResponse) => r.writeHead(500).end("no answer queued"));
  answer(res);
});
let base = "";

before(async () => {
  worker = (await generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443" })).worker;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

async function boot(url: string) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  state.modify(
    "network",
    LinkStatusType,
    "eth0",
    "test",
    () => ({ type: "ether", kind: "", hardwareAddr: "52:54:00:12:34:56" }) as never,
  );
  state.modify(
    "network",
    HostnameStatusType,
    HostnameStatusId,
    "test",
    () => ({ hostname: "talos-x1", domainname: "" }) as never,
  );
  const events = new EventBus();
  let metadata: PlatformMetadataSpec | undefined;
  const text = await configFromPlatform(
    {
      platform: { name: "metal", mode: "metal" },
      cmdline: new Map([["talos.config", [url]]]),
      state,
      mounter: systemMounter(),
      mountDir: "/nonexistent",
      identity: () => ({ uuid, serial: "QEMU-1" }),
      meta: () => undefined,
      signal: new AbortController().signal,
      networkReady: async () => undefined,
      log: logger("test"),
      // Retried at once: the test counts attempts, it does not time them.
      download: { backoffMs: () => 0 },
      // The node's checker, on a machine whose one disk is /dev/sda.
      checker: configChecker({ name: "metal", mode: "metal" }, fakeBlockSysfs({ "sda/size": "2097152" })),
      events,
      setMetadata: (m) => (metadata = m),
      setNetwork: () => undefined,
    },
    true,
  );
  return {
    text,
    metadata,
    events: events
      .backlog({ tailEvents: -1 })
      .map((e) => ({ type: e.type, error: String(decode(e.type, e.payload)["error"]) })),
  };
}

test("variables are filled in, 503s retried, the gzip body unpacked and used", async () => {
  requests.length = 0;
  const unavailable = (res: http.ServerResponse) => res.writeHead(503).end("starting");
  answers = [
    unavailable,
    unavailable,
    (res) => res.writeHead(200, { "content-type": "application/octet-stream" }).end(gzipSync(worker)),
  ];
  const r = await boot(base + "/configs/${uuid}?mac=${mac}&host=${hostname}&serial=${serial}");
  const expected = `/configs/${uuid}?host=talos-x1&mac=52%3A54%3A00%3A12%3A34%3A56&serial=QEMU-1`;
  assert.deepEqual(requests, [expected, expected, expected]);
  assert.equal(r.text, worker);
  assert.deepEqual(r.events, []);
  assert.deepEqual(r.metadata, { platform: "metal", instanceId: uuid });
});

test("a 404 is the server's final answer: one request, a ConfigLoadErrorEvent, no configuration", async () => {
  requests.length = 0;
  answers = [(res) => res.writeHead(404).end("no such machine")];
  const r = await boot(base + "/${uuid}");
  assert.deepEqual(requests, [`/${uuid}`]);
  assert.equal(r.text, undefined);
  assert.deepEqual(
    r.events.map((e) => e.type),
    ["machine.ConfigLoadErrorEvent"],
  );
  assert.match(
    r.events[0]!.error,
    /^error acquiring via platform metal: failed to download config, status code 404, body "no such machine"$/,
  );
});
