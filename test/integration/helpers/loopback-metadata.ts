// The metadata service of metadata-server.ts on a loopback port, in the test's own process:
// for tests that reach it through an HTTP that rewrites the service's address, without a
// network namespace. Also the retry timing and the configFromPlatform inputs those tests share.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { configChecker } from "../../../agent/src/cmd/wiring.js";
import { logger } from "../../../agent/src/log.js";
import type { Platform } from "../../../agent/src/machined/platform.js";
import type { RetryTiming } from "../../../agent/src/machined/platforms/retry.js";
import { fakeBlockSysfs } from "../../../agent/src/sys/block.js";
import { systemMounter } from "../../../agent/src/sys/mount.js";
import { metadataHandler, type Scenario } from "./metadata-server.js";

export interface LoopbackMetadata {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** Each request as metadata-server.ts prints it (a JSON line), oldest first. */
  readonly requests: string[];
  /** The service serves `scenario` from now on; the requests seen so far are forgotten. */
  serve(scenario: Scenario): void;
  /** Changes what is served without forgetting the requests (a service that mends). */
  change(scenario: Scenario): void;
  close(): void;
}

export async function loopbackMetadata(): Promise<LoopbackMetadata> {
  const work = mkdtempSync(path.join(os.tmpdir(), "basalt-loopback-metadata-"));
  const scenarioFile = path.join(work, "scenario.json");
  const requests: string[] = [];
  const server = http.createServer(metadataHandler(scenarioFile, (line) => requests.push(line)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const change = (scenario: Scenario) => writeFileSync(scenarioFile, JSON.stringify(scenario));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    serve: (scenario) => {
      change(scenario);
      requests.length = 0;
    },
    change,
    close: () => {
      server.closeAllConnections();
      server.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** Retries at once; gives up after `attempts` (the wait after the last would be endless). */
export function quickRetry(attempts: number): RetryTiming {
  return {
    backoffMs: (n) => (n < attempts ? 0 : Number.POSITIVE_INFINITY),
    totalTimeoutMs: 60_000,
    wait: async () => undefined,
  };
}

/** configFromPlatform's inputs that do not depend on the scenario: a node in a container, mounts under `work`. */
export function containerPlatformDeps(platform: Platform, work: string, signal: AbortSignal) {
  return {
    platform,
    mounter: systemMounter(),
    mountDir: path.join(work, "mnt"),
    identity: () => ({ uuid: "", serial: "" }),
    meta: () => undefined,
    signal,
    networkReady: async () => undefined,
    log: logger("platform"),
    checker: configChecker(platform, fakeBlockSysfs({})),
  };
}
