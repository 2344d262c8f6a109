// A cloud platform's metadata service misbehaving, against the real HTTP server of the
// metadata tests (helpers/metadata-server.ts) on a loopback port: malformed metadata, 500s,
// a service that never answers, user data that is no configuration. Each gives a console line
// and an event, never a failed boot: the node goes on to maintenance mode (or with its
// configuration), and reads the network again once the service mends.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { decode } from "../../agent/src/api/index.js";
import type { PlatformNetwork } from "../../agent/src/controllers/runtime/platform-network.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { networkDefinitions } from "../../agent/src/controllers/network/index.js";
import { setLogSink } from "../../agent/src/log.js";
import { EventBus } from "../../agent/src/machined/events.js";
import { configFromPlatform } from "../../agent/src/machined/platform-config.js";
import type { RetryTiming } from "../../agent/src/machined/platforms/retry.js";
import { fetchMetadataHttp, type MetadataHttp } from "../../agent/src/machined/platforms/metadata-http.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import type { PlatformMetadataSpec } from "../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import {
  containerPlatformDeps,
  loopbackMetadata,
  quickRetry,
  type LoopbackMetadata,
} from "./helpers/loopback-metadata.js";
import type { Scenario } from "./helpers/metadata-server.js";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-faults-"));
let service: LoopbackMetadata;
let config = "";

before(async () => {
  config = (await generateConfigs({ clusterName: "cloud", endpoint: "https://127.0.0.1:6443", installDisk: "" }))
    .controlplane;
  service = await loopbackMetadata();
});
after(() => {
  service.close();
  rmSync(work, { recursive: true, force: true });
});

/** One boot of a node of `scenario.platform`: what configFromPlatform returns, publishes and prints. */
async function boot(
  scenario: Scenario,
  opts: { userDataAttempts?: number; requestTimeoutMs?: number; mend?: Scenario; networkRead?: boolean } = {},
) {
  service.serve(scenario);
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const events = new EventBus();
  const ac = new AbortController();
  const console: string[] = [];
  const previousSink = setLogSink((line) => console.push(line));
  let metadata: PlatformMetadataSpec | undefined;
  let network: PlatformNetwork | undefined;
  const loopback = fetchMetadataHttp(ac.signal, opts.requestTimeoutMs ?? 5_000);
  const httpToServer: MetadataHttp = {
    request: (url, req) => loopback.request(url.replace("http://169.254.169.254", service.origin), req),
  };
  const seen = () =>
    events.backlog({ tailEvents: -1 }).map((e) => `${e.type}: ${String(decode(e.type, e.payload)["error"])}`);
  let networkRead: () => void = () => undefined;
  const networkDone = new Promise<void>((resolve) => (networkRead = resolve));
  const networkRetry: RetryTiming = {
    backoffMs: () => 0,
    totalTimeoutMs: Number.POSITIVE_INFINITY,
    // The service mends after the first failed read; without a mend the read waits until the boot ends.
    wait: async (_ms, signal) => {
      if (opts.mend) service.change(opts.mend);
      else await new Promise((resolve) => signal.addEventListener("abort", resolve));
    },
  };
  try {
    const text = await configFromPlatform(
      {
        ...containerPlatformDeps({ name: scenario.platform, mode: "container" }, work, ac.signal),
        cmdline: new Map(),
        state,
        events,
        setMetadata: (m) => (metadata = m),
        setNetwork: (n) => {
          network = n;
          networkRead();
        },
        cloud: { http: httpToServer, userDataRetry: quickRetry(opts.userDataAttempts ?? 3), networkRetry },
      },
      true,
    );
    // The network is read in the background; where it can be, the boot's view includes it.
    if (opts.networkRead) await networkDone;
    return { text, metadata, network, events: seen(), console };
  } finally {
    ac.abort();
    setLogSink(previousSink);
  }
}

test("malformed network metadata: a console line and one event; the user data still configures the node, and the network is read once the service mends", async () => {
  const r = await boot(
    { platform: "gcp", userData: config, fault: { body: '[{"accessConfigs": ' } },
    { mend: { platform: "gcp", userData: config }, networkRead: true },
  );
  assert.equal(r.text, config);
  assert.deepEqual(r.events.length, 1);
  assert.match(
    r.events[0]!,
    /^machine\.ConfigLoadErrorEvent: failed to read the network configuration of platform gcp: instance\/network-interfaces\/\?recursive=true&alt=json: malformed JSON: /,
  );
  assert.ok(
    r.console.some(
      (l) => /failed to read the network configuration of platform gcp/.test(l) && /"level":"error"/.test(l),
    ),
  );
  assert.equal(r.metadata?.instanceId, "4739274920481729301");
  assert.equal(r.network?.config?.links.length, 2);
});

test("500s: the user data is asked for again with backoff, then the node enters maintenance mode with a ConfigLoadErrorEvent", async () => {
  const r = await boot(
    { platform: "aws", userData: config, fault: { status: 500, body: "internal error" } },
    { userDataAttempts: 4 },
  );
  assert.equal(r.text, undefined);
  const userDataAsks = service.requests.filter((l) => l.includes('"url":"/latest/user-data"')).length;
  assert.equal(userDataAsks, 4);
  assert.deepEqual(r.events, [
    'machine.ConfigLoadErrorEvent: failed to fetch the user data of platform aws (gave up after 4 attempts): GET http://169.254.169.254/latest/user-data: status 500: "internal error"',
  ]);
  assert.ok(
    r.console.some((l) =>
      /failed to load the machine configuration from the platform; entering maintenance mode/.test(l),
    ),
  );
  assert.equal(r.network, undefined, "no network was read from a failing service");
});

test("a service that never answers: each request times out and is retried; then maintenance mode with an event", async () => {
  const r = await boot(
    { platform: "gcp", userData: config, fault: { hang: true } },
    { userDataAttempts: 2, requestTimeoutMs: 300 },
  );
  assert.equal(r.text, undefined);
  assert.ok(
    r.events.some((e) =>
      /^machine\.ConfigLoadErrorEvent: failed to fetch the user data of platform gcp \(gave up after 2 attempts\): GET .*user-data: .*(timeout|aborted)/i.test(
        e,
      ),
    ),
    r.events.join("\n"),
  );
});

test("user data that is not a configuration: ConfigLoadErrorEvent with Talos's wording, maintenance mode; PlatformMetadata still published", async () => {
  const r = await boot(
    { platform: "aws", userData: "#!/bin/bash\necho this is a shell script\n" },
    { networkRead: true },
  );
  assert.equal(r.text, undefined);
  assert.ok(
    r.events.some((e) => /^machine\.ConfigLoadErrorEvent: failed to load config via platform aws: /.test(e)),
    r.events.join("\n"),
  );
  assert.equal(r.metadata?.platform, "aws");
});
