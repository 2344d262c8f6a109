// Equinix Metal's events as a node acquiring its configuration sends them, against the real
// HTTP server of the metadata tests (helpers/metadata-server.ts) on a loopback port: the
// metadata served as Talos's testdata has it, its user_state_url pointing at this server's
// POST /events, which the kernel's em.events_url names as Equinix Metal injects it. The boot's
// own code runs: loadConfig, configFromPlatform, the platform's reads and the event delivery.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { networkDefinitions } from "../../agent/src/controllers/network/index.js";
import { logger, setLogSink } from "../../agent/src/log.js";
import { EventBus } from "../../agent/src/machined/events.js";
import { configFromPlatform } from "../../agent/src/machined/platform-config.js";
import { platformEvents } from "../../agent/src/machined/platform-events.js";
import { equinixMetal } from "../../agent/src/machined/platforms/equinixmetal.js";
import { fetchMetadataHttp, type MetadataHttp } from "../../agent/src/machined/platforms/metadata-http.js";
import type { RetryTiming } from "../../agent/src/machined/platforms/retry.js";
import { loadConfig } from "../../agent/src/machined/tasks/state.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { pathsAt } from "../../agent/src/sys/paths.js";
import {
  containerPlatformDeps,
  loopbackMetadata,
  quickRetry,
  type LoopbackMetadata,
} from "./helpers/loopback-metadata.js";
import type { Scenario } from "./helpers/metadata-server.js";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-events-"));
let service: LoopbackMetadata;
let config = "";
let eventsUrl = "";

const loaded = '{"type":"talos.prov.config.loaded","msg":"Talos machine config loaded successfully."}';
const activate = '{"type":"activate","msg":"Talos booted into maintenance mode. Ready for user interaction."}';

before(async () => {
  config = (await generateConfigs({ clusterName: "metal", endpoint: "https://127.0.0.1:6443", installDisk: "" }))
    .controlplane;
  service = await loopbackMetadata();
  service.serve({ platform: "equinixMetal" });
  const metadata = (await (await fetch(`${service.origin}/metadata`)).json()) as { user_state_url: string };
  eventsUrl = metadata.user_state_url;
});
after(() => {
  service.close();
  rmSync(work, { recursive: true, force: true });
});

/**
 * One boot of an Equinix Metal node without a stored configuration, through loadConfig: its
 * configuration, whether it entered maintenance mode (where `config` is applied), the POSTs the
 * server saw once every event was delivered, and the log. `beforeDrain` sees the log once loadConfig returned.
 */
async function boot(
  scenario: Omit<Scenario, "platform">,
  opts: { eventsUrl?: string; eventRetry?: RetryTiming; beforeDrain?: (log: Record<string, unknown>[]) => void } = {},
) {
  service.serve({ platform: "equinixMetal", ...scenario });
  const ac = new AbortController();
  const log: Record<string, unknown>[] = [];
  const previousSink = setLogSink((line) => log.push(JSON.parse(line) as Record<string, unknown>));
  const loopback = fetchMetadataHttp(ac.signal, 5_000);
  const metadataService: MetadataHttp = {
    request: (url, req) => loopback.request(url.replace("https://metadata.platformequinix.com", service.origin), req),
  };
  const cmdline = new Map([
    ["talos.platform", ["equinixMetal"]],
    ["em.events_url", [opts.eventsUrl ?? eventsUrl]],
  ]);
  const sent = platformEvents(equinixMetal, {
    http: fetchMetadataHttp(ac.signal, 5_000),
    cmdline,
    signal: ac.signal,
    retry: opts.eventRetry ?? quickRetry(3),
    log: logger("platform"),
  });
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const platform = { name: "equinixMetal", mode: "container" } as const;
  let maintenance = false;
  const r = {
    paths: pathsAt(path.join(work, "root")),
    configText: undefined as string | undefined,
    platformConfig: (wantConfig: boolean) =>
      configFromPlatform(
        {
          ...containerPlatformDeps(platform, work, ac.signal),
          cmdline,
          state,
          events: new EventBus(),
          setMetadata: () => undefined,
          setNetwork: () => undefined,
          platformEvent: sent.fire,
          cloud: { http: metadataService, userDataRetry: quickRetry(2) },
        },
        wantConfig,
      ),
    maintenance: async () => {
      maintenance = true;
      return config;
    },
    platformEvent: sent.fire,
  };
  try {
    await loadConfig(r);
    opts.beforeDrain?.(log);
    await sent.drained();
    const posts = service.requests
      .map((line) => JSON.parse(line) as { method: string; url: string; body?: string })
      .filter((q) => q.method === "POST")
      .map((q) => [q.url, q.body ?? ""]);
    return { text: r.configText, maintenance, posts, log };
  } finally {
    ac.abort();
    setLogSink(previousSink);
  }
}

test("the served metadata's user_state_url is this server's events endpoint", () => {
  assert.equal(eventsUrl, `${service.origin}/events`);
});

test("configuration from the user data: one POST, config loaded", async () => {
  const b = await boot({ userData: config });
  assert.equal(b.text, config);
  assert.equal(b.maintenance, false);
  assert.deepEqual(b.posts, [["/events", loaded]]);
});

test("no user data: activate on entering maintenance mode, then config loaded once one is applied", async () => {
  const b = await boot({});
  assert.equal(b.maintenance, true);
  assert.equal(b.text, config);
  assert.deepEqual(b.posts, [
    ["/events", activate],
    ["/events", loaded],
  ]);
});

test("user data that is no configuration: failure with the error, then activate and config loaded", async () => {
  const b = await boot({ userData: "#!/bin/bash\necho hello\n" });
  assert.equal(b.maintenance, true);
  assert.equal(b.posts.length, 3);
  assert.match(
    b.posts[0]![1],
    /^\{"type":"failure","msg":"Error loading and validating Talos machine config\.: failed to load config via platform equinixMetal: .+"\}$/,
  );
  assert.deepEqual(b.posts.slice(1), [
    ["/events", activate],
    ["/events", loaded],
  ]);
});

test("an events endpoint answering 500: each event is POSTed once and logged; the configuration is acquired", async () => {
  const b = await boot({ eventStatus: 500 });
  assert.equal(b.text, config);
  assert.deepEqual(b.posts, [
    ["/events", activate],
    ["/events", loaded],
  ]);
  const failed = b.log.filter((l) => l["msg"] === "failed sending event");
  assert.deepEqual(
    failed.map((l) => [l["level"], l["type"], l["error"]]),
    [
      ["warn", "activate", `POST ${eventsUrl}: status 500`],
      ["warn", "talos.prov.config.loaded", `POST ${eventsUrl}: status 500`],
    ],
  );
});

test("an unreachable events endpoint: the configuration is acquired while the POST is still being retried", async () => {
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/events`;
  await new Promise((resolve) => closed.close(resolve));
  // The wait before the second attempt opens only once loadConfig has returned: a boot that
  // waited for the delivery would never return.
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const eventRetry: RetryTiming = {
    backoffMs: (n) => (n < 2 ? 1000 : Number.POSITIVE_INFINITY),
    totalTimeoutMs: 60_000,
    wait: () => released,
  };
  let failedBeforeAcquired = true;
  const b = await boot(
    { userData: config },
    {
      eventsUrl: deadUrl,
      eventRetry,
      beforeDrain: (log) => {
        failedBeforeAcquired = log.some((l) => l["msg"] === "failed sending event");
        release();
      },
    },
  );
  assert.equal(b.text, config);
  assert.equal(b.posts.length, 0);
  const retried = b.log.filter((l) => l["msg"] === "event endpoint unreachable; retrying");
  assert.equal(retried.length, 1);
  const failed = b.log.filter((l) => l["msg"] === "failed sending event");
  assert.equal(failed.length, 1);
  assert.equal(failed[0]?.["type"], "talos.prov.config.loaded");
  assert.match(String(failed[0]?.["error"]), /gave up after 2 attempts/);
  assert.equal(failedBeforeAcquired, false, "loadConfig returned before the delivery ended");
});
