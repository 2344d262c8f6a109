// VMware's guestinfo as a node acquiring its configuration reads it: the boot's own code
// (loadConfig, configFromPlatform, the platform's reads over RPCI) against a VMware host's side of
// the backdoor (written from open-vm-tools' protocol: helpers/vmware-host.ts),
// which QEMU does not emulate. With talos.config=guestinfo the node takes its configuration from
// guestinfo and its hostname, instance id and network from guestinfo.metadata; without user data,
// with user data that is no configuration, or on a CPU that is no VMware one, it waits in
// maintenance mode, the last two saying why.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse as parseYaml } from "yaml";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import type { PlatformNetwork } from "../../agent/src/controllers/runtime/platform-network.js";
import { networkDefinitions } from "../../agent/src/controllers/network/index.js";
import { setLogSink } from "../../agent/src/log.js";
import { EventBus } from "../../agent/src/machined/events.js";
import { configFromPlatform } from "../../agent/src/machined/platform-config.js";
import { loadConfig } from "../../agent/src/machined/tasks/state.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import type { PlatformMetadataSpec } from "../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { pathsAt } from "../../agent/src/sys/paths.js";
import { fixturesRoot } from "./helpers/metadata-server.js";
import { FakeVmwareHost } from "./helpers/vmware-host.js";
import { containerPlatformDeps, quickRetry } from "./helpers/loopback-metadata.js";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-vmware-"));
const b64 = (s: string) => Buffer.from(s).toString("base64");
let config = "";

before(async () => {
  config = (await generateConfigs({ clusterName: "vsphere", endpoint: "https://10.0.0.5:6443", installDisk: "" }))
    .controlplane;
});
after(() => rmSync(work, { recursive: true, force: true }));

class RecordingBus extends EventBus {
  readonly seen: [string, object][] = [];
  override publish(type: string, payload: object, actorId = ""): void {
    this.seen.push([type, payload]);
    super.publish(type, payload, actorId);
  }
}

/**
 * One boot of a VMware node without a stored configuration on `host`: its configuration, whether
 * it entered maintenance mode (where `config` is applied), the PlatformMetadata and network once
 * read, the events and the log.
 */
async function boot(host: FakeVmwareHost) {
  const ac = new AbortController();
  const log: string[] = [];
  const previousSink = setLogSink((line) => log.push(line));
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const events = new RecordingBus();
  const platform = { name: "vmware", mode: "container" } as const;
  let metadata: PlatformMetadataSpec | undefined;
  let networkRead: (n: PlatformNetwork | undefined) => void = () => undefined;
  const network = new Promise<PlatformNetwork | undefined>((resolve) => {
    networkRead = resolve;
  });
  let maintenance = false;
  const r = {
    paths: pathsAt(path.join(work, "root")),
    configText: undefined as string | undefined,
    platformConfig: (wantConfig: boolean) =>
      configFromPlatform(
        {
          ...containerPlatformDeps(platform, work, ac.signal),
          cmdline: new Map([
            ["talos.platform", ["vmware"]],
            ["talos.config", ["guestinfo"]],
          ]),
          state,
          events,
          setMetadata: (m) => {
            metadata = m;
          },
          setNetwork: (n) => networkRead(n),
          cloud: { vmwareBackdoor: host, userDataRetry: quickRetry(2), networkRetry: quickRetry(2) },
        },
        wantConfig,
      ),
    maintenance: async () => {
      maintenance = true;
      return config;
    },
    // VMware has no events endpoint.
    platformEvent: () => undefined,
  };
  try {
    await loadConfig(r);
    const read = await network;
    return { text: r.configText, maintenance, metadata, network: read?.config, events: events.seen, log };
  } finally {
    ac.abort();
    setLogSink(previousSink);
  }
}

const fixture = (name: string) => readFileSync(path.join(fixturesRoot, "vmware", name), "utf8");
const metadataByName = () => b64(fixture("metadata-match-by-name.yaml"));

test("the configuration from guestinfo.talos.config; hostname, instance id and network from guestinfo.metadata", async () => {
  const host = new FakeVmwareHost(
    new Map([
      ["talos.config", b64(config)],
      ["metadata", metadataByName()],
    ]),
  );
  const b = await boot(host);
  assert.equal(b.text, config);
  assert.equal(b.maintenance, false);
  assert.deepEqual(b.network, parseYaml(fixture("expected-match-by-name.yaml")));
  assert.deepEqual(b.metadata, { platform: "vmware", hostname: "vmware-test-controlplane-zhnhr", instanceId: "1" });
  assert.deepEqual(b.events, []);
  assert.equal(host.channels.size, 0, "every RPCI channel closed");
});

test("the configuration from a vApp's OVF environment when guestinfo has none of its own", async () => {
  const ovfEnv = `<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"><PropertySection><Property oe:key="talos.config" oe:value="${b64(config)}"/></PropertySection></Environment>`;
  const b = await boot(new FakeVmwareHost(new Map([["ovfenv", ovfEnv]])));
  assert.equal(b.text, config);
  assert.deepEqual(b.metadata, { platform: "vmware" });
});

test("no user data: maintenance mode, with the hostname guestinfo.metadata gives", async () => {
  const b = await boot(new FakeVmwareHost(new Map([["metadata", metadataByName()]])));
  assert.equal(b.maintenance, true);
  assert.equal(b.text, config, "the configuration applied in maintenance mode");
  assert.deepEqual(b.network?.hostnames, [
    { hostname: "vmware-test-controlplane-zhnhr", domainname: "", layer: "platform" },
  ]);
  assert.ok(b.log.some((l) => l.includes("platform vmware gives no user data; entering maintenance mode")));
  assert.deepEqual(b.events, []);
});

test("user data that is no configuration: a ConfigLoadErrorEvent, then maintenance mode", async () => {
  const b = await boot(new FakeVmwareHost(new Map([["talos.config", b64("#cloud-config\nhostname: x\n")]])));
  assert.equal(b.maintenance, true);
  assert.deepEqual(
    b.events.map(([type]) => type),
    ["machine.ConfigLoadErrorEvent"],
  );
});

test("on a CPU that is no VMware one: the reason on the console and in a ConfigLoadErrorEvent; maintenance mode", async () => {
  const qemu = new FakeVmwareHost(new Map([["talos.config", b64(config)]]));
  qemu.signature = "TCGTCGTCGTCG";
  const b = await boot(qemu);
  assert.equal(b.maintenance, true);
  assert.deepEqual(b.metadata, { platform: "vmware" });
  const reason = `not a VMware virtual machine: the CPU's hypervisor signature is \\"TCGTCGTCGTCG\\"`;
  assert.ok(
    b.log.some((l) => l.includes(`failed to fetch the user data of platform vmware: ${reason}`)),
    b.log.join("\n"),
  );
  assert.equal(b.events.length, 1);
  assert.equal(b.events[0]![0], "machine.ConfigLoadErrorEvent");
  assert.match(JSON.stringify(b.events[0]![1]), /not a VMware virtual machine/);
  assert.deepEqual(qemu.requests, [], "no RPCI where there is no VMware");
});
