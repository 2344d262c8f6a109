import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { logger } from "../../../../agent/src/log.js";
import {
  PlatformUserDataError,
  readCloudNetwork,
  readCloudUserData,
  type CloudReadDeps,
} from "../../../../agent/src/machined/platforms/cloud-source.js";
import type { RetryTiming } from "../../../../agent/src/machined/platforms/retry.js";
import { MetadataError, MetadataUnreachableError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import type { CloudPlatform } from "../../../../agent/src/machined/platforms/platform.js";
import {
  emptyPlatformNetworkConfig,
  type PlatformNetworkConfig,
} from "../../../../agent/src/network/platform-config.js";
import { platformIo, ScriptedHttp } from "./helpers.js";

/** A platform whose reads fail as scripted, one outcome per attempt. */
function scripted(
  network: (Error | PlatformNetworkConfig)[],
  userData: (Error | Buffer | undefined)[],
): CloudPlatform & { networkReads: number; userDataReads: number } {
  const p = {
    name: "aws",
    networkReads: 0,
    userDataReads: 0,
    readNetwork: async () => {
      const next = network[p.networkReads++]!;
      if (next instanceof Error) throw next;
      return next;
    },
    readUserData: async () => {
      const next = userData[p.userDataReads++];
      if (next instanceof Error) throw next;
      return next;
    },
  };
  return p;
}

function deps(platform: CloudPlatform, signal = new AbortController().signal): CloudReadDeps {
  return {
    platform,
    io: platformIo(new ScriptedHttp(new Map())),
    signal,
    networkReady: async () => undefined,
    log: logger("test"),
  };
}

/** Records the waits instead of waiting. */
function timing(totalTimeoutMs = Number.POSITIVE_INFINITY): RetryTiming & { waits: number[] } {
  const waits: number[] = [];
  return { waits, backoffMs: (n) => 1000 * n, totalTimeoutMs, wait: async (ms) => waits.push(ms) };
}

const unreachable = () => new MetadataUnreachableError("connect ECONNREFUSED 169.254.169.254:80");

describe("reading a cloud platform", () => {
  it("asks for the user data again while the service cannot be reached, with growing waits", async () => {
    const p = scripted([], [unreachable(), unreachable(), Buffer.from("version: v1alpha1")]);
    const t = timing();
    assert.equal((await readCloudUserData(deps(p), t))?.toString(), "version: v1alpha1");
    assert.deepEqual(t.waits, [1000, 2000]);
  });

  it("gives up on the user data when the next wait would pass the timeout (waits of 1 and 2 s fit in 2.5 s, 3 s does not), and at once on a wrong answer", async () => {
    const t = timing(2500);
    await assert.rejects(
      readCloudUserData(deps(scripted([], [unreachable(), unreachable(), unreachable()])), t),
      (err: unknown) => err instanceof PlatformUserDataError && /gave up after 3 attempts/.test(err.message),
    );
    const wrong = scripted([], [new MetadataError("GET http://169.254.169.254/latest/user-data: status 403")]);
    await assert.rejects(readCloudUserData(deps(wrong), timing()), PlatformUserDataError);
    assert.equal(wrong.userDataReads, 1);
  });

  it("reads the network until it succeeds; a wrong answer is reported once per distinct failure, an unreachable service not at all", async () => {
    const good = emptyPlatformNetworkConfig();
    const bad = new MetadataError("instance/network-interfaces: malformed JSON");
    const p = scripted([unreachable(), bad, bad, unreachable(), good], []);
    const read: PlatformNetworkConfig[] = [];
    const reported: string[] = [];
    const t = timing();
    await readCloudNetwork(deps(p), { read: (c) => read.push(c), bad: (m) => reported.push(m) }, t);
    assert.deepEqual(read, [good]);
    assert.deepEqual(reported, [
      "failed to read the network configuration of platform aws: instance/network-interfaces: malformed JSON",
    ]);
    assert.deepEqual(t.waits, [1000, 2000, 3000, 4000]);
  });

  it("stops reading the network when the node stops, without rejecting", async () => {
    const ac = new AbortController();
    const p = scripted([unreachable(), unreachable()], []);
    const t: RetryTiming = {
      backoffMs: () => 10,
      totalTimeoutMs: Number.POSITIVE_INFINITY,
      wait: async () => {
        // As a real wait does when the node stops during it.
        ac.abort();
        throw new Error("aborted");
      },
    };
    await readCloudNetwork(
      deps(p, ac.signal),
      { read: () => assert.fail("nothing was read"), bad: () => assert.fail("nothing was wrong") },
      t,
    );
    assert.equal(p.networkReads, 1);
  });
});
