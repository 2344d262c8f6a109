// The network config applied live, end to end: the sandbox runs in a network namespace
// of its own with `--network-apply` (as a node applies its network), reached over a
// management veth that the kernel command line tells it to ignore. A static `ip=`
// on the command line, then `.machine.network` applied in maintenance mode and
// changed and removed with NO_REBOOT; what the API reports is checked against the
// kernel as iproute2 reads it. The driven link's peer is in the root namespace, so a
// client can also reach the node on an address the config changes (Talos #8566).

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { ApplyMode } from "../../agent/src/api/enums.js";
import { decode } from "../../agent/src/api/index.js";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { eventually, stopProcess } from "./helpers/sandbox.js";

const skip = canRunNetns();
const tag = process.pid.toString(36);
const NS = `bsl-st-${tag}`;
const MGMT_HOST = `bsm${tag}`; // root namespace side
const MGMT = `bsn${tag}`; // sandbox side, ignored by the sandbox
const LINK = `bsc${tag}`; // the link the config drives
const PEER = `bsp${tag}`;
const octet = (process.pid % 200) + 20;
const MGMT_NET = freeSubnet("10.214", octet);
const NET = `10.215.${octet}`;
const PORT = 50000;
const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");
const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-net-static-"));

let sandbox: ChildProcess | undefined;
let output = "";
let client: NodeClient;
let baseConfig = "";
let talosconfig = "";

type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];
async function specs(ns: string, type: string): Promise<Map<string, Record<string, unknown>>> {
  const items = (await client.resourceList(ns, type)) as Listed;
  return new Map(
    items.map((i) => [i.resource.metadata.id, parseYaml(i.resource.spec.yaml_spec) as Record<string, unknown>]),
  );
}
const kernelAddrs = (dev: string) =>
  (
    (
      JSON.parse(ip("-n", NS, "-j", "-4", "addr", "show", "dev", dev)) as {
        addr_info: { local: string; prefixlen: number }[];
      }[]
    )[0]?.addr_info ?? []
  )
    .map((a) => `${a.local}/${a.prefixlen}`)
    .sort();
const kernelMtu = (dev: string) =>
  (JSON.parse(ip("-n", NS, "-j", "link", "show", "dev", dev)) as { mtu: number }[])[0]!.mtu;
const kernelRoutes = () =>
  (
    JSON.parse(ip("-n", NS, "-j", "-4", "route", "show", "table", "main")) as {
      dst: string;
      gateway?: string;
      metric?: number;
      dev: string;
    }[]
  )
    .filter((r) => r.gateway)
    .map((r) => `${r.dst} via ${r.gateway} metric ${r.metric ?? 0} dev ${r.dev}`)
    .sort();

/** The generated controlplane config with `network` replaced by this YAML block (indented under machine:). */
function withNetwork(block: string): string {
  return baseConfig.replace(
    /^(\s+)network: \{\}$/m,
    (_, indent: string) => `${indent}network:\n${block.replace(/^/gm, `${indent}    `)}`,
  );
}

before(async () => {
  if (skip) return;
  ip("netns", "add", NS);
  ip("link", "add", MGMT_HOST, "type", "veth", "peer", "name", MGMT, "netns", NS);
  ip("addr", "add", `${MGMT_NET}.1/30`, "dev", MGMT_HOST);
  ip("link", "set", MGMT_HOST, "up");
  ip("-n", NS, "addr", "add", `${MGMT_NET}.2/30`, "dev", MGMT);
  ip("-n", NS, "link", "set", MGMT, "up");
  ip("link", "add", PEER, "type", "veth", "peer", "name", LINK, "netns", NS);
  ip("addr", "add", `${NET}.1/24`, "dev", PEER);
  ip("link", "set", PEER, "up");

  const generated = await generateConfigs({
    clusterName: "net-static",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
  });
  baseConfig = generated.controlplane;
  talosconfig = generated.talosconfig;
  const cmdline = `talos.network.interface.ignore=${MGMT} ip=${NET}.20::${NET}.1:24:cmdline-host:${LINK}:off:${NET}.53`;
  sandbox = spawn(
    "ip",
    [
      "netns",
      "exec",
      NS,
      process.execPath,
      sandboxJs,
      "--state-dir",
      stateDir,
      "--apid-listen",
      `0.0.0.0:${PORT}`,
      "--trustd-listen",
      `${MGMT_NET}.2:${PORT + 1}`,
      "--apid-in-process",
      "--network-apply",
      "--kernel-cmdline",
      cmdline,
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, BASALT_LOG_LEVEL: "info" } },
  );
  sandbox.stdout!.on("data", (b: Buffer) => (output += b.toString()));
  sandbox.stderr!.on("data", (b: Buffer) => (output += b.toString()));
  client = new NodeClient({ endpoint: `${MGMT_NET}.2:${PORT}`, credentials: { kind: "insecure" } });
  await eventually(() => client.disks());
});

after(async () => {
  client?.close();
  if (sandbox) await stopProcess(sandbox);
  for (const args of [
    ["link", "del", MGMT_HOST],
    ["link", "del", PEER],
    ["netns", "del", NS],
  ]) {
    try {
      ip(...args);
    } catch {
      // already gone
    }
  }
  rmSync(stateDir, { recursive: true, force: true });
});

test("ip= on the kernel command line: its address, route, hostname and resolver are applied", {
  skip: skip ?? false,
}, async () => {
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.20/24`]));
  const addr = (await specs("network", "AddressSpecs.net.talos.dev")).get(`${LINK}/${NET}.20/24`);
  assert.deepEqual(addr, {
    address: `${NET}.20/24`,
    linkName: LINK,
    family: "inet4",
    scope: "global",
    flags: "permanent",
    layer: "cmdline",
  });
  await eventually(async () => assert.deepEqual(kernelRoutes(), [`default via ${NET}.1 metric 1024 dev ${LINK}`]));
  const hostname = (await specs("network", "HostnameStatuses.net.talos.dev")).get("hostname");
  assert.deepEqual(hostname, { hostname: "cmdline-host", domainname: "" });
  await eventually(async () =>
    assert.deepEqual((await specs("network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
      dnsServers: [`${NET}.53`],
    }),
  );
  // The ignored management link keeps exactly what iproute2 gave it.
  assert.deepEqual(kernelAddrs(MGMT), [`${MGMT_NET}.2/30`]);
  assert.equal((await specs("network", "LinkSpecs.net.talos.dev")).has(MGMT), false);
});

test("machine.network applied, an address deleted behind its back restored, changed and removed live", {
  skip: skip ?? false,
}, async () => {
  const first = withNetwork(
    [
      "hostname: config-host.lab.test",
      "disableSearchDomain: true",
      "extraHostEntries:",
      `    - ip: ${NET}.99`,
      "      aliases: [registry.lab.test, registry]",
      "interfaces:",
      `    - interface: ${LINK}`,
      "      mtu: 1400",
      `      addresses: [${NET}.10/24, ${NET}.11/24, ${NET}.20/24]`,
      "      routes:",
      `          - network: 192.0.2.0/24`,
      `            gateway: ${NET}.1`,
      "            metric: 200",
    ].join("\n"),
  );
  await client.applyConfiguration(first);
  client.close();
  client = new NodeClient({
    endpoint: `${MGMT_NET}.2:${PORT}`,
    credentials: { kind: "mtls", ...parseTalosconfig(talosconfig) },
  });
  await eventually(() => client.version());

  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.10/24`, `${NET}.11/24`, `${NET}.20/24`]));
  await eventually(async () => assert.equal(kernelMtu(LINK), 1400));
  await eventually(async () =>
    assert.deepEqual(
      kernelRoutes(),
      [`192.0.2.0/24 via ${NET}.1 metric 200 dev ${LINK}`, `default via ${NET}.1 metric 1024 dev ${LINK}`].sort(),
    ),
  );
  // The same address on both layers: the configuration wins; the hostname too.
  assert.equal(
    (await specs("network", "AddressSpecs.net.talos.dev")).get(`${LINK}/${NET}.20/24`)!.layer,
    "configuration",
  );
  assert.equal(
    (await specs("network-config", "AddressSpecs.net.talos.dev")).get(`cmdline/${LINK}/${NET}.20/24`)!.layer,
    "cmdline",
  );
  await eventually(async () =>
    assert.deepEqual((await specs("network", "HostnameStatuses.net.talos.dev")).get("hostname"), {
      hostname: "config-host",
      domainname: "lab.test",
    }),
  );
  // Talos's AddressEvent on the Events stream: the hostname and the current addresses.
  type EventMsg = { data: { type_url: string; value: Buffer } };
  const isOurs = (e: EventMsg) => {
    if (e.data.type_url !== "talos/runtime/machine.AddressEvent") return false;
    const p = decode("machine.AddressEvent", e.data.value) as { hostname?: string; addresses?: string[] };
    return p.hostname === "config-host" && (p.addresses ?? []).includes(`${NET}.11`);
  };
  await client.collectUntil<EventMsg>(client.machine, "Events", { tail_events: -1 }, isOurs);
  const statuses = await specs("network", "AddressStatuses.net.talos.dev");
  for (const a of ["10", "11", "20"]) assert.equal(statuses.get(`${LINK}/${NET}.${a}/24`)?.linkName, LINK);
  assert.equal((await specs("network", "LinkStatuses.net.talos.dev")).get(LINK)!.mtu, 1400);
  const routeSpec = (await specs("network", "RouteSpecs.net.talos.dev")).get(`inet4/${NET}.1/192.0.2.0/24/200`);
  assert.deepEqual(routeSpec, {
    family: "inet4",
    dst: "192.0.2.0/24",
    src: "",
    gateway: `${NET}.1`,
    outLinkName: LINK,
    table: "main",
    priority: 200,
    scope: "global",
    type: "unicast",
    flags: "",
    protocol: "static",
    layer: "configuration",
  });

  // /etc files under the sandbox's state: hosts with the node's name and the extra entry; no search line.
  const etc = path.join(stateDir, "system", "etc");
  await eventually(async () =>
    assert.match(
      readFileSync(path.join(etc, "hosts"), "utf8"),
      new RegExp(`\\S+ +config-host\\.lab\\.test config-host\n`),
    ),
  );
  assert.match(
    readFileSync(path.join(etc, "hosts"), "utf8"),
    new RegExp(`\n${NET.replaceAll(".", "\\.")}\\.99 +registry\\.lab\\.test registry\n`),
  );
  assert.equal(readFileSync(path.join(etc, "resolv.conf"), "utf8"), `nameserver ${NET}.53\n`);

  ip("-n", NS, "addr", "del", `${NET}.10/24`, "dev", LINK);
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.10/24`, `${NET}.11/24`, `${NET}.20/24`]));

  const second = withNetwork(
    [
      "hostname: config-host",
      "interfaces:",
      `    - interface: ${LINK}`,
      "      mtu: 1300",
      `      addresses: [${NET}.12/24]`,
      "      routes:",
      `          - network: 198.51.100.0/24`,
      `            gateway: ${NET}.1`,
      "            metric: 300",
    ].join("\n"),
  );
  const reply = (await client.applyConfiguration(second, { mode: ApplyMode.NO_REBOOT })) as {
    messages: { mode_details: string }[];
  };
  assert.equal(reply.messages[0]!.mode_details, "Applied configuration without a reboot");
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.12/24`, `${NET}.20/24`]));
  await eventually(async () => assert.equal(kernelMtu(LINK), 1300));
  await eventually(async () =>
    assert.deepEqual(
      kernelRoutes(),
      [`198.51.100.0/24 via ${NET}.1 metric 300 dev ${LINK}`, `default via ${NET}.1 metric 1024 dev ${LINK}`].sort(),
    ),
  );
  assert.equal((await specs("network", "AddressSpecs.net.talos.dev")).get(`${LINK}/${NET}.20/24`)!.layer, "cmdline");

  await client.applyConfiguration(baseConfig, { mode: ApplyMode.NO_REBOOT });
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.20/24`]));
  await eventually(async () => assert.deepEqual(kernelRoutes(), [`default via ${NET}.1 metric 1024 dev ${LINK}`]));
  await eventually(async () =>
    assert.equal((await specs("network", "HostnameStatuses.net.talos.dev")).get("hostname")!.hostname, "cmdline-host"),
  );
  assert.deepEqual(kernelAddrs(MGMT), [`${MGMT_NET}.2/30`]);
  assert.equal(kernelMtu(MGMT), 1500);
  assert.doesNotMatch(output, /controller failed.*network\.(Address|Route|Link)Spec/);
});

test("a NO_REBOOT apply removing the address its client connected to answers before the address goes (Talos #8566)", {
  skip: skip ?? false,
}, async () => {
  const addresses = (list: string) =>
    withNetwork(["interfaces:", `    - interface: ${LINK}`, `      addresses: [${list}]`].join("\n"));
  await client.applyConfiguration(addresses(`${NET}.10/24, ${NET}.11/24`), { mode: ApplyMode.NO_REBOOT });
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.10/24`, `${NET}.11/24`, `${NET}.20/24`]));
  const credentials = { kind: "mtls" as const, ...parseTalosconfig(talosconfig) };
  const overTen = new NodeClient({ endpoint: `${NET}.10:${PORT}`, credentials });
  // While the node cannot send to the client (a blackhole route; this kernel has no netfilter or
  // netem), its reply waits unacknowledged in the connection: the address it leaves from must stay.
  ip("netns", "exec", NS, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", `net.ipv4.conf.${LINK}.rp_filter=0`);
  try {
    await eventually(() => overTen.version());
    ip("-n", NS, "route", "add", "blackhole", `${NET}.1/32`);
    const reply = overTen.applyConfiguration(addresses(`${NET}.11/24`), { mode: ApplyMode.NO_REBOOT }) as Promise<{
      messages: { mode_details: string }[];
    }>;
    await eventually(async () =>
      assert.equal((await specs("network", "AddressSpecs.net.talos.dev")).has(`${LINK}/${NET}.10/24`), false),
    );
    assert.deepEqual(
      kernelAddrs(LINK),
      [`${NET}.10/24`, `${NET}.11/24`, `${NET}.20/24`],
      "the kernel keeps the address while the reply is unacknowledged",
    );
    ip("-n", NS, "route", "del", "blackhole", `${NET}.1/32`);
    assert.equal((await reply).messages[0]!.mode_details, "Applied configuration without a reboot");
  } finally {
    overTen.close();
    try {
      ip("-n", NS, "route", "del", "blackhole", `${NET}.1/32`);
    } catch {
      // removed above
    }
  }
  await eventually(async () => assert.deepEqual(kernelAddrs(LINK), [`${NET}.11/24`, `${NET}.20/24`]));
  const overEleven = new NodeClient({ endpoint: `${NET}.11:${PORT}`, credentials });
  try {
    await eventually(() => overEleven.version());
  } finally {
    overEleven.close();
  }
  assert.doesNotMatch(output, /reply did not report its delivery|did not acknowledge a reply/);
});
