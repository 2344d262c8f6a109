// Cloud platforms end to end: the sandbox started as a node of a platform (`--platform`) in a
// network namespace of its own, its link on 169.254.0.0/16, and the platform's metadata service
// (helpers/metadata-server.ts, the documented protocol) on 169.254.169.254:80 in another
// namespace across a veth. With user data the node takes its configuration from it; without, it
// waits in maintenance mode; either way PlatformMetadata, the hostname, the external addresses and
// the platform's network specs come from the service. The node's API is reached over a
// management veth that the kernel command line tells it to ignore.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import type { Scenario } from "./helpers/metadata-server.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { eventually, stopProcess } from "./helpers/sandbox.js";

const skip = canRunNetns();
const tag = process.pid.toString(36);
const NODE_NS = `bsl-pn-${tag}`;
const MD_NS = `bsl-pm-${tag}`;
const MGMT_HOST = `bpm${tag}`;
const MGMT = `bpn${tag}`;
const LINK = `bpl${tag}`; // the node's link towards the metadata service
const MD_LINK = `bpd${tag}`;
const MGMT_NET = freeSubnet("10.216", (process.pid % 200) + 20);
const PORT = 50000;
const NODE_ADDRESS = "169.254.10.2";
const here = path.dirname(fileURLToPath(import.meta.url));
const sandboxJs = path.resolve(here, "../../agent/src/cmd/sandbox.js");
const serverJs = path.resolve(here, "helpers/metadata-server.js");
const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-"));
const scenarioFile = path.join(work, "scenario.json");

let server: ChildProcess | undefined;
const requests: { method: string; url: string; headers: Record<string, string> }[] = [];
let controlplane = "";
let talosconfig = "";

const ignore = (f: () => unknown) => {
  try {
    f();
  } catch {
    // already gone
  }
};

before(async () => {
  if (skip) return;
  ip("netns", "add", NODE_NS);
  ip("netns", "add", MD_NS);
  ip("link", "add", MGMT_HOST, "type", "veth", "peer", "name", MGMT, "netns", NODE_NS);
  ip("addr", "add", `${MGMT_NET}.1/30`, "dev", MGMT_HOST);
  ip("link", "set", MGMT_HOST, "up");
  ip("-n", NODE_NS, "addr", "add", `${MGMT_NET}.2/30`, "dev", MGMT);
  ip("-n", NODE_NS, "link", "set", MGMT, "up");
  ip("-n", NODE_NS, "link", "add", LINK, "type", "veth", "peer", "name", MD_LINK, "netns", MD_NS);
  ip("-n", MD_NS, "addr", "add", "169.254.169.254/16", "dev", MD_LINK);
  ip("-n", MD_NS, "link", "set", MD_LINK, "up");
  ip("-n", MD_NS, "link", "set", "lo", "up");
  writeFileSync(scenarioFile, JSON.stringify({ platform: "none" }));
  server = spawn("ip", ["netns", "exec", MD_NS, process.execPath, serverJs, "--listen", "169.254.169.254:80", "--scenario", scenarioFile], { stdio: ["ignore", "pipe", "inherit"] });
  let pending = "";
  await new Promise<void>((resolve, reject) => {
    server!.once("exit", (code) => reject(new Error(`metadata server exited (${code})`)));
    server!.stdout!.on("data", (b: Buffer) => {
      pending += b.toString();
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) {
        if (line === "listening") resolve();
        else if (line.startsWith("{")) requests.push(JSON.parse(line) as (typeof requests)[number]);
      }
    });
  });
  const generated = await generateConfigs({ clusterName: "cloud", endpoint: "https://127.0.0.1:6443", installDisk: "" });
  controlplane = generated.controlplane;
  talosconfig = generated.talosconfig;
});

after(async () => {
  if (server) await stopProcess(server);
  for (const args of [["link", "del", MGMT_HOST], ["netns", "del", NODE_NS], ["netns", "del", MD_NS]]) ignore(() => ip(...args));
  rmSync(work, { recursive: true, force: true });
});

interface Node {
  client: NodeClient;
  output(): string;
  stop(): Promise<void>;
}

/** A fresh node of `platform` (new state directory) against the service as `scenario` says. */
async function boot(scenario: Scenario): Promise<Node> {
  writeFileSync(scenarioFile, JSON.stringify(scenario));
  requests.length = 0;
  const stateDir = mkdtempSync(path.join(work, "state-"));
  const cmdline = `talos.network.interface.ignore=${MGMT} ip=${NODE_ADDRESS}:::255.255.0.0::${LINK}:off`;
  const child = spawn(
    "ip",
    ["netns", "exec", NODE_NS, process.execPath, sandboxJs, "--state-dir", stateDir, "--apid-listen", `0.0.0.0:${PORT}`, "--trustd-listen", `${MGMT_NET}.2:${PORT + 1}`, "--apid-in-process", "--network-apply", "--kernel-cmdline", cmdline, "--platform", scenario.platform],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, BASALT_LOG_LEVEL: "info" } },
  );
  let out = "";
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const client = new NodeClient({ endpoint: `${MGMT_NET}.2:${PORT}`, credentials: { kind: "insecure" } });
  return {
    client,
    output: () => out,
    stop: async () => {
      client.close();
      await stopProcess(child);
      process.removeListener("exit", killOnExit);
    },
  };
}

type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];
async function specs(client: NodeClient, ns: string, type: string): Promise<Map<string, Record<string, unknown>>> {
  const items = (await client.resourceList(ns, type)) as Listed;
  return new Map(items.map((i) => [i.resource.metadata.id, parseYaml(i.resource.spec.yaml_spec) as Record<string, unknown>]));
}
const platformMetadata = async (client: NodeClient) => (await specs(client, "runtime", "PlatformMetadatas.talos.dev")).get("platformmetadata");

/** The node over mutual TLS once it runs the configuration it got. */
async function configured(node: Node): Promise<NodeClient> {
  const mtls = new NodeClient({ endpoint: `${MGMT_NET}.2:${PORT}`, credentials: { kind: "mtls", ...parseTalosconfig(talosconfig) } });
  await eventually(() => mtls.version(), 300);
  return mtls;
}

interface PlatformCase {
  /** What `get platformmetadata` shows. */
  metadata: Record<string, unknown>;
  hostname: { hostname: string; domainname: string };
  externalIPs: string[];
  /** Checks of the platform's own rules and network, on the configured node. */
  check?(client: NodeClient): Promise<void>;
}

const cases: Record<string, PlatformCase> = {
  aws: {
    metadata: {
      platform: "aws",
      hostname: "ip-172-31-40-7.eu-west-1.compute.internal",
      region: "eu-west-1",
      zone: "eu-west-1b",
      instanceType: "m6i.large",
      instanceId: "i-0f1e2d3c4b5a69788",
      providerId: "aws:///eu-west-1b/i-0f1e2d3c4b5a69788",
      spot: true,
    },
    hostname: { hostname: "ip-172-31-40-7", domainname: "eu-west-1.compute.internal" },
    externalIPs: ["203.0.113.45/32", "2001:db8:1234:1a00::7/128"],
    check: async () => {
      // Every read went through a session token.
      const puts = requests.filter((r) => r.method === "PUT");
      assert.ok(puts.length >= 1 && puts.every((r) => r.url === "/latest/api/token" && r.headers["x-aws-ec2-metadata-token-ttl-seconds"] === "300"));
      assert.ok(requests.filter((r) => r.method === "GET").every((r) => /^token-\d+$/.test(r.headers["x-aws-ec2-metadata-token"] ?? "")));
      assert.ok(requests.some((r) => r.url === "/latest/user-data"));
    },
  },
  gcp: {
    metadata: {
      platform: "gcp",
      hostname: "node-a.us-central1-b.c.basalt-demo-401712.internal",
      region: "us-central1",
      zone: "us-central1-b",
      instanceType: "e2-standard-4",
      instanceId: "4739274920481729301",
      providerId: "gce://basalt-demo-401712/us-central1-b/node-a",
      spot: true,
    },
    hostname: { hostname: "node-a", domainname: "us-central1-b.c.basalt-demo-401712.internal" },
    externalIPs: ["34.123.45.67/32"],
    check: async (client) => {
      assert.ok(requests.length > 0 && requests.every((r) => r.headers["metadata-flavor"] === "Google"));
      await eventually(async () => assert.deepEqual((await specs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), { dnsServers: ["169.254.169.254"] }));
      assert.deepEqual((await specs(client, "network-config", "TimeServerSpecs.net.talos.dev")).get("platform/timeservers"), { timeServers: ["metadata.google.internal"], layer: "platform" });
      assert.equal((await specs(client, "network-config", "LinkSpecs.net.talos.dev")).get("platform/eth0")?.["mtu"], 1460);
    },
  },
};

for (const [platform, c] of Object.entries(cases)) {
  describe(platform, { skip: skip ?? false }, () => {
    test("user data is the configuration; PlatformMetadata, hostname, external addresses and network from the metadata service", async () => {
      const node = await boot({ platform, userData: controlplane });
      try {
        const client = await configured(node);
        try {
          await eventually(async () => assert.deepEqual(await platformMetadata(client), c.metadata));
          await eventually(async () => assert.deepEqual((await specs(client, "network", "HostnameStatuses.net.talos.dev")).get("hostname"), c.hostname));
          assert.equal((await specs(client, "network-config", "HostnameSpecs.net.talos.dev")).get("platform/hostname")?.["layer"], "platform");
          const external = [...(await specs(client, "network", "AddressStatuses.net.talos.dev")).values()].filter((a) => a["linkName"] === "external").map((a) => a["address"]);
          assert.deepEqual(external.sort(), [...c.externalIPs].sort());
          await c.check?.(client);
        } finally {
          client.close();
        }
      } finally {
        await node.stop();
      }
    });

    test("no user data: maintenance mode, PlatformMetadata and the hostname still read", async () => {
      const node = await boot({ platform });
      try {
        await eventually(() => node.client.disks(), 300);
        await eventually(async () => assert.deepEqual(await platformMetadata(node.client), c.metadata));
        await eventually(async () => assert.deepEqual((await specs(node.client, "network", "HostnameStatuses.net.talos.dev")).get("hostname"), c.hostname));
        assert.match(node.output(), new RegExp(`platform ${platform} gives no user data; entering maintenance mode`));
      } finally {
        await node.stop();
      }
    });
  });
}
