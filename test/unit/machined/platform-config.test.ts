// The platform's configuration at boot through configFromPlatform, with file:// URLs
// (talos.config= accepts them, as Talos's download does): what is returned, the
// PlatformMetadata published and the events a bad configuration leaves.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { after, before, test } from "node:test";
import { decode } from "../../../agent/src/api/index.js";
import { configChecker } from "../../../agent/src/cmd/wiring.js";
import { fakeBlockSysfs } from "../../../agent/src/sys/block.js";
import { generateConfigs } from "../../../agent/src/config/generate/index.js";
import { logger } from "../../../agent/src/log.js";
import { EventBus } from "../../../agent/src/machined/events.js";
import { configFromPlatform } from "../../../agent/src/machined/platform-config.js";
import type { PlatformMetadataSpec } from "../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { systemMounter } from "../../../agent/src/sys/mount.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-platform-config-"));
let worker = "";
before(async () => {
  worker = (await generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443" })).worker;
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function boot(cmdline: Record<string, string>) {
  const events = new EventBus();
  let metadata: PlatformMetadataSpec | undefined;
  const text = await configFromPlatform(
    {
      platform: { name: "metal", mode: "metal" },
      cmdline: new Map(Object.entries(cmdline).map(([k, v]) => [k, [v]])),
      state: new ResourceState(),
      mounter: systemMounter(),
      mountDir: path.join(dir, "mnt"),
      identity: () => ({ uuid: "8a3c5e1f-0000-4000-8000-000000000001", serial: "" }),
      meta: () => undefined,
      signal: new AbortController().signal,
      networkReady: async () => undefined,
      log: logger("test"),
      // The node's checker, on a machine whose one disk is /dev/sda.
      checker: configChecker({ name: "metal", mode: "metal" }, fakeBlockSysfs({ "sda/size": "2097152" })),
      events,
      setMetadata: (m) => (metadata = m),
      setNetwork: () => undefined,
    },
    true,
  );
  const published = events
    .backlog({ tailEvents: -1 })
    .map((e) => ({ type: e.type, error: String(decode(e.type, e.payload)["error"]) }));
  return { text, metadata, published };
}

function file(name: string, data: string | Buffer): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, data);
  return `file://${p}`;
}

test("a gzip-compressed configuration is unpacked, validated and used; PlatformMetadata names metal, the hostname and the SMBIOS uuid", async () => {
  const r = await boot({ "talos.config": file("worker.yaml.gz", gzipSync(worker)), "talos.hostname": "node-7" });
  assert.equal(r.text, worker);
  assert.deepEqual(r.metadata, {
    platform: "metal",
    hostname: "node-7",
    instanceId: "8a3c5e1f-0000-4000-8000-000000000001",
  });
  assert.deepEqual(r.published, []);
});

test("no talos.config=, or none: no configuration and no event", async () => {
  for (const cmdline of [{}, { "talos.config": "none" }] as Record<string, string>[]) {
    const r = await boot(cmdline);
    assert.equal(r.text, undefined);
    assert.deepEqual(r.published, []);
    assert.deepEqual(r.metadata, { platform: "metal", instanceId: "8a3c5e1f-0000-4000-8000-000000000001" });
  }
});

test("a configuration that does not parse is a ConfigLoadErrorEvent; one that does not validate a ConfigValidationErrorEvent naming every problem", async () => {
  const bad = await boot({ "talos.config": file("bad.yaml", "version: v1alpha1\nmachine: [1, 2\n") });
  assert.equal(bad.text, undefined);
  assert.equal(bad.published.length, 1);
  assert.equal(bad.published[0]!.type, "machine.ConfigLoadErrorEvent");
  assert.match(bad.published[0]!.error, /^failed to load config via platform metal: failed to parse config: /);

  const invalid = await boot({
    "talos.config": file(
      "invalid.yaml",
      worker
        .replace("disk: /dev/sda", "disk: /dev/nope")
        .replace("endpoint: https://10.5.0.2:6443", "endpoint: 10.5.0.2"),
    ),
  });
  assert.equal(invalid.text, undefined);
  assert.deepEqual(
    invalid.published.map((e) => e.type),
    ["machine.ConfigValidationErrorEvent"],
  );
  assert.equal(
    invalid.published[0]!.error,
    'failed to validate config acquired via platform metal: configuration validation failed: 2 errors occurred:\n\t* .machine.install.disk: specified install disk does not exist: "/dev/nope"\n\t* .cluster.controlPlane.endpoint: invalid controlplane endpoint: parse "10.5.0.2": not an absolute URL with scheme and host\n\n',
  );

  const missing = await boot({ "talos.config": `file://${path.join(dir, "absent.yaml")}` });
  assert.deepEqual(
    missing.published.map((e) => e.type),
    ["machine.ConfigLoadErrorEvent"],
  );
  assert.match(missing.published[0]!.error, /^error acquiring via platform metal: reading .*absent\.yaml failed/);
});
