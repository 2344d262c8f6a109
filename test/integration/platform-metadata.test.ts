// Cloud platforms end to end: the sandbox started as a node of a platform (`--platform`) in a
// network namespace of its own, its link on 169.254.0.0/16, and the platform's metadata service
// (helpers/metadata-server.ts, the documented protocol) on 169.254.169.254:80 (Scaleway's on
// 169.254.42.42:80; Equinix Metal's HTTPS on :443, its name in the node's /etc/hosts, its
// certificate from a test CA the node trusts) in another
// namespace across a veth. With user data the node takes its configuration from it; without, it
// waits in maintenance mode; either way PlatformMetadata, the hostname, the external addresses and
// the platform's network specs come from the service. The node's API is reached over a
// management veth that the kernel command line tells it to ignore.

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { fixturesRoot, type Scenario } from "./helpers/metadata-server.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { resourceSpecs } from "./helpers/resource-specs.js";
import { eventually, stopProcess } from "./helpers/sandbox.js";

const skip = canRunNetns();
const tag = process.pid.toString(36);
const NODE_NS = `bsl-pn-${tag}`;
const MD_NS = `bsl-pm-${tag}`;
const MGMT_HOST = `bpm${tag}`;
const MGMT = `bpn${tag}`;
const LINK = `bpl${tag}`; // the node's link towards the metadata service (renamed where a platform names it)
const MD_LINK = `bpd${tag}`;
const MGMT_NET = freeSubnet("10.216", (process.pid % 200) + 20);
const PORT = 50000;
const NODE_ADDRESS = "169.254.10.2";
const here = path.dirname(fileURLToPath(import.meta.url));
const sandboxJs = path.resolve(here, "../../agent/src/cmd/sandbox.js");
const serverJs = path.resolve(here, "helpers/metadata-server.js");
const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-"));
const scenarioFile = path.join(work, "scenario.json");
const EQUINIX_HOST = "metadata.platformequinix.com";
const caCert = path.join(work, "ca.pem");
const netnsEtc = `/etc/netns/${NODE_NS}`;

/** A test CA and the Equinix Metal service's certificate signed by it; returns the certificate's and key's paths. */
function equinixCertificate(): { cert: string; key: string } {
  const file = (name: string) => path.join(work, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    file("ca.key"),
    "-out",
    caCert,
    "-subj",
    "/CN=basalt test CA",
    "-days",
    "2",
  );
  openssl("req", ...ec, "-keyout", file("md.key"), "-out", file("md.csr"), "-subj", `/CN=${EQUINIX_HOST}`);
  writeFileSync(file("md.ext"), `subjectAltName=DNS:${EQUINIX_HOST}\n`);
  openssl(
    "x509",
    "-req",
    "-in",
    file("md.csr"),
    "-CA",
    caCert,
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-out",
    file("md.pem"),
    "-days",
    "2",
    "-extfile",
    file("md.ext"),
  );
  return { cert: file("md.pem"), key: file("md.key") };
}

let server: ChildProcess | undefined;
const requests: {
  method: string;
  host: string;
  url: string;
  sourcePort: number;
  headers: Record<string, string>;
  body?: string;
}[] = [];
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
  // Azure's wire server is on 168.63.129.16, beside its metadata service.
  ip("-n", MD_NS, "addr", "add", "168.63.129.16/32", "dev", MD_LINK);
  // Scaleway's metadata service is on 169.254.42.42, in the same link-local network.
  ip("-n", MD_NS, "addr", "add", "169.254.42.42/16", "dev", MD_LINK);
  // `ip netns exec` mounts /etc/netns/<name>/hosts on the node's /etc/hosts: Equinix Metal's service by name.
  mkdirSync(netnsEtc, { recursive: true });
  writeFileSync(path.join(netnsEtc, "hosts"), `127.0.0.1 localhost\n169.254.169.254 ${EQUINIX_HOST}\n`);
  const tls = equinixCertificate();
  server = spawn(
    "ip",
    [
      "netns",
      "exec",
      MD_NS,
      process.execPath,
      serverJs,
      "--listen",
      "169.254.169.254:80",
      "--listen",
      "168.63.129.16:80",
      "--listen",
      "169.254.42.42:80",
      "--tls-listen",
      "169.254.169.254:443",
      "--tls-cert",
      tls.cert,
      "--tls-key",
      tls.key,
      "--scenario",
      scenarioFile,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
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
  const generated = await generateConfigs({
    clusterName: "cloud",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
  });
  controlplane = generated.controlplane;
  talosconfig = generated.talosconfig;
});

after(async () => {
  if (server) await stopProcess(server);
  for (const args of [
    ["link", "del", MGMT_HOST],
    ["netns", "del", NODE_NS],
    ["netns", "del", MD_NS],
  ])
    ignore(() => ip(...args));
  rmSync(netnsEtc, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

interface Node {
  client: NodeClient;
  output(): string;
  stop(): Promise<void>;
}

let nodeLink = LINK;

/** The node's link under `name` (as the platform's network names it), with no address or route left from an earlier boot. */
function freshNodeLink(name: string, mac?: string): void {
  if (nodeLink !== name) {
    ip("-n", NODE_NS, "link", "set", nodeLink, "down");
    ip("-n", NODE_NS, "link", "set", nodeLink, "name", name);
    nodeLink = name;
  }
  if (mac) ip("-n", NODE_NS, "link", "set", nodeLink, "address", mac);
  ip("-n", NODE_NS, "addr", "flush", "dev", nodeLink);
  ip("-n", NODE_NS, "-6", "route", "flush", "dev", nodeLink);
}

/** A fresh node of `platform` (new state directory) against the service as `scenario` says. */
async function boot(scenario: Scenario, gateway = ""): Promise<Node> {
  writeFileSync(scenarioFile, JSON.stringify(scenario));
  requests.length = 0;
  const stateDir = mkdtempSync(path.join(work, "state-"));
  const cmdline = `talos.network.interface.ignore=${MGMT} ip=${NODE_ADDRESS}::${gateway}:255.255.0.0::${nodeLink}:off`;
  const child = spawn(
    "ip",
    [
      "netns",
      "exec",
      NODE_NS,
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
      "--platform",
      scenario.platform,
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, BASALT_LOG_LEVEL: "info", NODE_EXTRA_CA_CERTS: caCert },
    },
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

const platformMetadata = async (client: NodeClient) =>
  (await resourceSpecs(client, "runtime", "PlatformMetadatas.talos.dev")).get("platformmetadata");

/** Runs `fn` on the node; a failure carries the tail of what the node printed. */
async function on<T>(node: Node, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Error) err.message += `\n--- the node printed (tail):\n${node.output().slice(-6000)}`;
    throw err;
  }
}

/** The node over mutual TLS once it runs the configuration it got. */
async function configured(node: Node): Promise<NodeClient> {
  const mtls = new NodeClient({
    endpoint: `${MGMT_NET}.2:${PORT}`,
    credentials: { kind: "mtls", ...parseTalosconfig(talosconfig) },
  });
  await eventually(() => mtls.version(), 300);
  return mtls;
}

interface PlatformCase {
  /** What `get platformmetadata` shows. */
  metadata: Record<string, unknown>;
  /** What it shows without user data, where that differs (another source). */
  maintenanceMetadata?: Record<string, unknown>;
  /** The node's link takes this MAC address (the platform's network names it). */
  linkMac?: string;
  /** The node's link's name, where the platform names links (eth0); default a name of the test's own. */
  linkName?: string;
  /** Addresses the metadata service's side of the link also has (the gateways the platform's routes go through). */
  serviceAddresses?: string[];
  /** The node's default gateway (given on the kernel command line, as DHCP would). */
  gateway?: string;
  /** Why the user data case cannot run on this host, if it cannot. */
  userDataSkip?: string | undefined;
  /** Checks of the maintenance-mode node. */
  checkWithoutUserData?(client: NodeClient): Promise<void>;
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
      assert.ok(
        puts.length >= 1 &&
          puts.every(
            (r) => r.url === "/latest/api/token" && r.headers["x-aws-ec2-metadata-token-ttl-seconds"] === "300",
          ),
      );
      assert.ok(
        requests
          .filter((r) => r.method === "GET")
          .every((r) => /^token-\d+$/.test(r.headers["x-aws-ec2-metadata-token"] ?? "")),
      );
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
      await eventually(async () =>
        assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
          dnsServers: ["169.254.169.254"],
        }),
      );
      assert.deepEqual(
        (await resourceSpecs(client, "network-config", "TimeServerSpecs.net.talos.dev")).get("platform/timeservers"),
        { timeServers: ["metadata.google.internal"], layer: "platform" },
      );
      assert.equal(
        (await resourceSpecs(client, "network-config", "LinkSpecs.net.talos.dev")).get("platform/eth0")?.["mtu"],
        1460,
      );
    },
  },
  openstack: {
    metadata: {
      platform: "openstack",
      hostname: "node-b.novalocal",
      zone: "nova-az2",
      instanceType: "m1.large",
      instanceId: "8c5e9f1a-2b3d-4e6f-9a0b-1c2d3e4f5a6b",
      providerId: "openstack:///8c5e9f1a-2b3d-4e6f-9a0b-1c2d3e4f5a6b",
    },
    hostname: { hostname: "node-b", domainname: "novalocal" },
    externalIPs: ["198.51.100.20/32"],
    linkMac: "fa:16:3e:5a:21:0b",
    check: async (client) => {
      assert.ok(requests.some((r) => r.url === "/openstack/latest/network_data.json"));
      await openstackNetworkApplied(client);
    },
  },
  "digital-ocean": {
    metadata: {
      platform: "digital-ocean",
      hostname: "node-c",
      region: "fra1",
      instanceId: "371254091",
      providerId: "digitalocean://371254091",
    },
    hostname: { hostname: "node-c", domainname: "" },
    externalIPs: ["164.92.180.55/32", "2a03:b0c0:3:d0::1a2b:3001/128"],
    linkName: "eth0",
    // The droplet's public gateway, which the route to the metadata service goes through.
    serviceAddresses: ["164.92.176.1/20"],
    check: async (client) => {
      await eventually(async () =>
        assert.deepEqual(kernelAddrs("eth0", "-4"), ["164.92.180.55/20", `${NODE_ADDRESS}/16`]),
      );
      await eventually(async () => assert.deepEqual(kernelAddrs("eth0", "-4", "link"), ["10.19.0.5/16"]));
      await eventually(async () => assert.ok(kernelAddrs("eth0", "-6").includes("2a03:b0c0:3:d0::1a2b:3001/64")));
      await eventually(async () =>
        assert.deepEqual(
          kernelRoutes(),
          [
            "169.254.169.254 via 164.92.176.1 metric 512 dev eth0",
            "default via 164.92.176.1 metric 1024 dev eth0",
          ].sort(),
        ),
      );
      await eventually(async () =>
        assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
          dnsServers: ["67.207.67.2", "67.207.67.3"],
        }),
      );
    },
  },
  hcloud: {
    metadata: {
      platform: "hcloud",
      hostname: "node-d",
      region: "fsn1",
      zone: "fsn1-dc14",
      instanceId: "48213377",
      providerId: "hcloud://48213377",
    },
    hostname: { hostname: "node-d", domainname: "" },
    externalIPs: ["49.12.201.17/32", "2a01:4f8:1c1e:8d2a::1/128"],
    linkName: "eth0",
    check: async (client) => {
      await eventually(async () => assert.ok(kernelAddrs("eth0", "-6").includes("2a01:4f8:1c1e:8d2a::1/64")));
      assert.deepEqual(
        (await resourceSpecs(client, "network", "OperatorSpecs.net.talos.dev")).get("dhcp4/eth0")?.["layer"],
        "platform",
      );
    },
  },
  vultr: {
    metadata: {
      platform: "vultr",
      hostname: "node-e",
      region: "FRA",
      instanceId: "4f6b2c1e-8d3a-4b5c-9e7f-0a1b2c3d4e5f",
      providerId: "vultr://4f6b2c1e-8d3a-4b5c-9e7f-0a1b2c3d4e5f",
    },
    hostname: { hostname: "node-e", domainname: "" },
    externalIPs: ["45.76.88.120/32", "2001:19f0:6c01:1b2a:5400:4ff:fe5a:1b2c/128"],
    linkName: "eth0",
    check: async () => {
      await eventually(async () =>
        assert.deepEqual(kernelAddrs("eth0", "-4"), [`${NODE_ADDRESS}/16`, "45.76.88.120/23"]),
      );
      await eventually(async () => assert.deepEqual(kernelRoutes(), ["default via 45.76.88.1 dev eth0"]));
    },
  },
  azure: {
    metadata: {
      platform: "azure",
      hostname: "node-f",
      region: "westeurope",
      zone: "westeurope-2",
      instanceType: "Standard_D4s_v5",
      instanceId:
        "/subscriptions/7d1c2b3a-4e5f-6071-8293-a4b5c6d7e8f9/resourceGroups/basalt-rg/providers/Microsoft.Compute/virtualMachines/node-f",
      providerId:
        "azure:///subscriptions/7d1c2b3a-4e5f-6071-8293-a4b5c6d7e8f9/resourceGroups/basalt-rg/providers/Microsoft.Compute/virtualMachines/node-f",
      spot: true,
    },
    hostname: { hostname: "node-f", domainname: "" },
    externalIPs: ["20.86.15.99/32", "2603:1020:206:3::7/128", "51.124.80.12/32"],
    // The wire server (on the service's side) is reached through the default gateway, as on Azure.
    gateway: "169.254.169.254",
    // The configuration is on a UDF provisioning CD, which the node mounts.
    userDataSkip: readFileSync("/proc/filesystems", "utf8").includes("udf")
      ? undefined
      : "this kernel has no UDF filesystem to mount Azure's provisioning CD with",
    checkWithoutUserData: async (client) => {
      // Provisioning completes: the goal state read, then Ready posted for its container and instance.
      const wire = requests.filter((r) => r.host === "168.63.129.16");
      assert.deepEqual(
        wire.map((r) => `${r.method} ${r.url}`),
        ["GET /machine/?comp=goalstate", "POST /machine/?comp=health"],
      );
      assert.match(
        wire[1]!.body ?? "",
        /<ContainerId>4b2c8f3e-1d0a-4e6b-9c5f-7a8b9c0d1e2f<\/ContainerId>.*<InstanceId>0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0\._node-f<\/InstanceId><Health><State>Ready<\/State>/,
      );
      assert.ok(requests.filter((r) => r.host === "169.254.169.254").every((r) => r.headers["metadata"] === "true"));
      const external = [...(await resourceSpecs(client, "network", "AddressStatuses.net.talos.dev")).values()]
        .filter((a) => a["linkName"] === "external")
        .map((a) => a["address"]);
      assert.deepEqual(external.sort(), ["20.86.15.99/32", "2603:1020:206:3::7/128", "51.124.80.12/32"]);
    },
  },
  oracle: {
    metadata: {
      platform: "oracle",
      hostname: "node-g",
      region: "fra",
      zone: "EU-FRANKFURT-1-AD-2",
      instanceType: "VM.Standard.A1.Flex",
      instanceId: "ocid1.instance.oc1.eu-frankfurt-1.antheljt5kq2c3d4e5f6",
      providerId: "oci://ocid1.instance.oc1.eu-frankfurt-1.antheljt5kq2c3d4e5f6",
    },
    hostname: { hostname: "node-g", domainname: "" },
    externalIPs: [],
    check: async (client) => {
      assert.ok(requests.length > 0 && requests.every((r) => r.headers["authorization"] === "Bearer Oracle"));
      assert.ok(requests.some((r) => r.url === "/opc/v2/instance/metadata/user_data"));
      await eventually(async () =>
        assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
          dnsServers: ["169.254.169.254"],
        }),
      );
      assert.deepEqual(
        (await resourceSpecs(client, "network", "TimeServerStatuses.net.talos.dev")).get("timeservers"),
        {
          timeServers: ["169.254.169.254"],
        },
      );
    },
  },
  scaleway: {
    metadata: {
      platform: "scaleway",
      hostname: "scw-talos",
      region: "zone-name",
      zone: "zone-name-1",
      instanceType: "DEV1-S",
      instanceId: "11111111-1111-1111-1111-111111111111",
      providerId: "scaleway://instance/zone-name-1/11111111-1111-1111-1111-111111111111",
    },
    hostname: { hostname: "scw-talos", domainname: "" },
    externalIPs: ["11.22.222.222/32", "2001:111:222:3333::1/128"],
    linkName: "eth0",
    check: async () => {
      // The service answers the user data only to a privileged port: the node asked from one.
      const userData = requests.filter((r) => r.url === "/user_data/cloud-init");
      assert.ok(userData.length >= 1 && userData.every((r) => r.host === "169.254.42.42" && r.sourcePort < 1024));
      await eventually(async () => assert.ok(kernelAddrs("eth0", "-6").includes("2001:111:222:3333::1/64")));
      await eventually(async () =>
        assert.deepEqual(
          ip("-n", NODE_NS, "-4", "route", "show", "169.254.42.42").trim(),
          "169.254.42.42 dev eth0 proto static scope link metric 1024",
        ),
      );
    },
  },
  upcloud: {
    metadata: {
      platform: "upcloud",
      hostname: "talos",
      instanceId: "00123456-1111-2222-3333-123456789012",
      providerId: "upcloud://00123456-1111-2222-3333-123456789012",
    },
    hostname: { hostname: "talos", domainname: "" },
    externalIPs: ["185.70.197.2/32", "2a04:3544:8000:1000:0:1111:2222:3333/128"],
    linkName: "eth0",
    check: async (client) => {
      await eventually(async () =>
        assert.deepEqual(kernelAddrs("eth0", "-4"), ["169.254.10.2/16", "185.70.197.3/32"].sort()),
      );
      await eventually(async () =>
        assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
          dnsServers: ["94.237.127.9", "94.237.40.9", "2a04:3540:53::1", "2a04:3544:53::1"],
        }),
      );
    },
  },
  exoscale: {
    metadata: {
      platform: "exoscale",
      hostname: "talos.fqdn",
      instanceType: "standard.tiny",
      instanceId: "3085c764-b270-45b0-b974-68c55a9c2d53",
      providerId: "exoscale://3085c764-b270-45b0-b974-68c55a9c2d53",
    },
    hostname: { hostname: "talos", domainname: "fqdn" },
    externalIPs: ["1.2.3.4/32"],
    check: async () => {
      assert.ok(requests.some((r) => r.url === "/1.0/user-data"));
      assert.ok(requests.some((r) => r.url === "/1.0/meta-data/service-offering"));
    },
  },
  akamai: {
    metadata: {
      platform: "akamai",
      hostname: "talos",
      region: "us-east",
      instanceType: "g6-standard-1",
      instanceId: "123456",
      providerId: "linode://123456",
    },
    hostname: { hostname: "talos", domainname: "" },
    externalIPs: ["172.1.2.3/32", "2600:3c05:d011:797::/128"],
    linkName: "eth0",
    check: async () => {
      // Every read went through a token.
      assert.ok(requests.some((r) => r.method === "PUT" && r.url === "/v1/token"));
      assert.ok(
        requests
          .filter((r) => r.method === "GET")
          .every((r) => /^linode-token-\d+$/.test(r.headers["metadata-token"] ?? "")),
      );
      assert.ok(requests.some((r) => r.url === "/v1/user-data"));
      await eventually(async () =>
        assert.deepEqual(kernelAddrs("eth0", "-4"), ["169.254.10.2/16", "172.1.2.3/32", "192.1.2.3/32"]),
      );
      await eventually(async () => assert.ok(kernelAddrs("eth0", "-6").includes("2600:3c05:d011:797::/64")));
    },
  },
  equinixMetal: {
    metadata: {
      platform: "equinixMetal",
      hostname: "infra-green-ci",
      region: "ny",
      zone: "ny5",
      instanceType: "c3.medium.x86",
      instanceId: "X",
      providerId: "equinixmetal://X",
    },
    hostname: { hostname: "infra-green-ci", domainname: "" },
    externalIPs: ["147.75.78.41/32", "2604:1380:45d1:fd00::11/128"],
    check: async (client) => {
      // Over HTTPS, by the service's name.
      assert.ok(requests.some((r) => r.url === "/userdata" && r.host === EQUINIX_HOST));
      // The bond and its addresses as the node's platform layer holds them (this host's kernel may have no bonding).
      const bond = (await resourceSpecs(client, "network-config", "LinkSpecs.net.talos.dev")).get("platform/bond0");
      assert.deepEqual(
        [bond?.["kind"], (bond?.["bondMaster"] as Record<string, unknown>)?.["mode"]],
        ["bond", "802.3ad"],
      );
      const addresses = [...(await resourceSpecs(client, "network-config", "AddressSpecs.net.talos.dev")).values()]
        .filter((a) => a["layer"] === "platform")
        .map((a) => `${a["address"]} ${a["linkName"]}`);
      assert.deepEqual(addresses.sort(), [
        "10.66.142.17/31 bond0",
        "147.75.78.41/31 bond0",
        "2604:1380:45d1:fd00::11/127 bond0",
      ]);
    },
  },
};

const kernelAddrs = (dev: string, family: "-4" | "-6", scope = "global") =>
  (
    (
      JSON.parse(ip("-n", NODE_NS, "-j", family, "addr", "show", "dev", dev)) as {
        addr_info: { local: string; prefixlen: number; scope: string }[];
      }[]
    )[0]?.addr_info ?? []
  )
    .filter((a) => a.scope === scope)
    .map((a) => `${a.local}/${a.prefixlen}`)
    .sort();
const kernelRoutes = () =>
  (
    JSON.parse(ip("-n", NODE_NS, "-j", "-4", "route", "show", "table", "main")) as {
      dst: string;
      gateway?: string;
      metric?: number;
      dev: string;
    }[]
  )
    .filter((r) => r.gateway)
    .map((r) => `${r.dst} via ${r.gateway}${r.metric ? ` metric ${r.metric}` : ""} dev ${r.dev}`)
    .sort();

/** network_data.json's addresses, routes and DNS on the node's link with its MAC. */
async function openstackNetworkApplied(client: NodeClient): Promise<void> {
  await eventually(async () => assert.deepEqual(kernelAddrs(nodeLink, "-4"), ["10.217.0.5/24", `${NODE_ADDRESS}/16`]));
  await eventually(async () => assert.ok(kernelAddrs(nodeLink, "-6").includes("2001:db8:c0de::5/64")));
  await eventually(async () =>
    assert.deepEqual(
      kernelRoutes(),
      [
        `10.217.8.0/21 via 10.217.0.254 metric 1024 dev ${nodeLink}`,
        `default via 10.217.0.1 metric 1024 dev ${nodeLink}`,
      ].sort(),
    ),
  );
  await eventually(async () =>
    assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
      dnsServers: ["10.217.0.2", "2001:db8:c0de::2"],
    }),
  );
}

/**
 * An OpenStack config drive as nova makes one (genisoimage, ISO 9660 with Rock Ridge and Joliet,
 * volume label config-2) holding the fixture's documents and this user data, on a loop device.
 */
function configDrive(userData: string): () => void {
  const dir = mkdtempSync(path.join(work, "config-drive-"));
  const latest = path.join(dir, "openstack", "latest");
  mkdirSync(latest, { recursive: true });
  copyFileSync(path.join(fixturesRoot, "openstack", "meta_data.json"), path.join(latest, "meta_data.json"));
  copyFileSync(path.join(fixturesRoot, "openstack", "network_data.json"), path.join(latest, "network_data.json"));
  writeFileSync(path.join(latest, "user_data"), userData);
  return attachIso(dir, "config-2", "OpenStack Compute");
}

/** `dir` as an ISO 9660 image (Rock Ridge, Joliet) with this volume label, on a read-only loop device; returns its removal. */
function attachIso(dir: string, label: string, publisher: string): () => void {
  const iso = `${dir}.iso`;
  execFileSync("genisoimage", [
    "-o",
    iso,
    "-ldots",
    "-allow-lowercase",
    "-allow-multidot",
    "-l",
    "-publisher",
    publisher,
    "-quiet",
    "-J",
    "-r",
    "-V",
    label,
    dir,
  ]);
  const loop = execFileSync("losetup", ["-f", "--show", "-r", iso], { encoding: "utf8" }).trim();
  return () => execFileSync("losetup", ["-d", loop]);
}

/** `dir` as a small ext4 filesystem with this label (mkfs.ext4 -d), on a read-only loop device; returns its removal. */
function attachExt4(dir: string, label: string): () => void {
  const image = `${dir}.ext4`;
  execFileSync("mkfs.ext4", ["-q", "-F", "-L", label, "-d", dir, image, "4M"]);
  const loop = execFileSync("losetup", ["-f", "--show", "-r", image], { encoding: "utf8" }).trim();
  return () => execFileSync("losetup", ["-d", loop]);
}

const hasIso9660 = readFileSync("/proc/filesystems", "utf8").includes("iso9660");

/**
 * An OpenNebula context volume (label CONTEXT) holding the fixture's context.sh, with USER_DATA
 * when given: a CD as OpenNebula makes it where this kernel reads ISO 9660, else ext4 (the node
 * mounts whatever filesystem the labelled volume has, as Talos does).
 */
function contextVolume(userData?: string): () => void {
  const dir = mkdtempSync(path.join(work, "context-"));
  const contextSh = readFileSync(path.join(fixturesRoot, "opennebula", "context.sh"), "utf8");
  const user = userData === undefined ? "" : `USER_DATA="${Buffer.from(userData).toString("base64")}"\n`;
  writeFileSync(path.join(dir, "context.sh"), contextSh + user);
  return hasIso9660 ? attachIso(dir, "CONTEXT", "OpenNebula") : attachExt4(dir, "CONTEXT");
}

// The node mounts the drive: the kernel running the test must read ISO 9660 (a node's does).
const isoSkip =
  skip ??
  (readFileSync("/proc/filesystems", "utf8").includes("iso9660")
    ? undefined
    : "this kernel has no ISO 9660 filesystem to mount a config drive with");
describe("openstack config drive", { skip: isoSkip ?? false }, () => {
  test("a config-2 drive made with genisoimage configures the node: its user data, meta_data and network_data; the service is not asked", async () => {
    freshNodeLink(LINK, "fa:16:3e:5a:21:0b");
    const undo = configDrive(controlplane);
    try {
      const node = await boot({ platform: "openstack" });
      try {
        const client = await on(node, () => configured(node));
        try {
          // From the drive: no instance type and no external address (the service gives those).
          const { instanceType: _fromTheService, ...fromTheDrive } = cases["openstack"]!.metadata;
          await eventually(async () => assert.deepEqual(await platformMetadata(client), fromTheDrive));
          await on(node, () => openstackNetworkApplied(client));
          assert.deepEqual(requests, []);
        } finally {
          client.close();
        }
      } finally {
        await node.stop();
      }
    } finally {
      undo();
    }
  });
});

describe("opennebula context volume", { skip: skip ?? false }, () => {
  const metadata = { platform: "opennebula", hostname: "code-server", instanceId: "14" };
  /** context.sh's static network on eth0, its DNS and hostname; the metadata service is never asked. */
  async function contextApplied(client: NodeClient): Promise<void> {
    await eventually(async () => assert.deepEqual(await platformMetadata(client), metadata));
    await eventually(async () =>
      assert.deepEqual((await resourceSpecs(client, "network", "HostnameStatuses.net.talos.dev")).get("hostname"), {
        hostname: "code-server",
        domainname: "",
      }),
    );
    await eventually(async () =>
      assert.deepEqual(kernelAddrs("eth0", "-4"), [`${NODE_ADDRESS}/16`, "192.168.1.92/24"]),
    );
    await eventually(async () =>
      assert.deepEqual((await resourceSpecs(client, "network", "ResolverStatuses.net.talos.dev")).get("resolvers"), {
        dnsServers: ["192.168.1.1", "8.8.8.8", "1.1.1.1"],
      }),
    );
    assert.deepEqual(requests, []);
  }

  test("USER_DATA is the configuration; network, hostname and PlatformMetadata from context.sh", async () => {
    freshNodeLink("eth0");
    const undo = contextVolume(controlplane);
    try {
      const node = await boot({ platform: "opennebula" });
      try {
        const client = await on(node, () => configured(node));
        try {
          await on(node, () => contextApplied(client));
        } finally {
          client.close();
        }
      } finally {
        await node.stop();
      }
    } finally {
      undo();
    }
  });

  test("no USER_DATA: maintenance mode, the context's network and hostname still applied", async () => {
    freshNodeLink("eth0");
    const undo = contextVolume();
    try {
      const node = await boot({ platform: "opennebula" });
      try {
        await eventually(() => node.client.disks(), 300);
        await on(node, () => contextApplied(node.client));
        assert.match(node.output(), /platform opennebula gives no user data; entering maintenance mode/);
      } finally {
        await node.stop();
      }
    } finally {
      undo();
    }
  });
});

for (const [platform, c] of Object.entries(cases)) {
  describe(platform, { skip: skip ?? false }, () => {
    before(() => {
      for (const a of c.serviceAddresses ?? []) ip("-n", MD_NS, "addr", "add", a, "dev", MD_LINK);
    });
    after(() => {
      for (const a of c.serviceAddresses ?? []) ip("-n", MD_NS, "addr", "del", a, "dev", MD_LINK);
    });
    test("user data is the configuration; PlatformMetadata, hostname, external addresses and network from the metadata service", {
      skip: c.userDataSkip ?? false,
    }, async () => {
      freshNodeLink(c.linkName ?? LINK, c.linkMac);
      const node = await boot({ platform, userData: controlplane }, c.gateway);
      try {
        const client = await on(node, () => configured(node));
        try {
          await eventually(async () => assert.deepEqual(await platformMetadata(client), c.metadata));
          await eventually(async () =>
            assert.deepEqual(
              (await resourceSpecs(client, "network", "HostnameStatuses.net.talos.dev")).get("hostname"),
              c.hostname,
            ),
          );
          assert.equal(
            (await resourceSpecs(client, "network-config", "HostnameSpecs.net.talos.dev")).get("platform/hostname")?.[
              "layer"
            ],
            "platform",
          );
          const external = [...(await resourceSpecs(client, "network", "AddressStatuses.net.talos.dev")).values()]
            .filter((a) => a["linkName"] === "external")
            .map((a) => a["address"]);
          assert.deepEqual(external.sort(), [...c.externalIPs].sort());
          await on(node, async () => c.check?.(client));
        } finally {
          client.close();
        }
      } finally {
        await node.stop();
      }
    });

    test("no user data: maintenance mode, PlatformMetadata and the hostname still read", async () => {
      freshNodeLink(c.linkName ?? LINK, c.linkMac);
      const node = await boot({ platform }, c.gateway);
      try {
        await eventually(() => node.client.disks(), 300);
        await eventually(async () =>
          assert.deepEqual(await platformMetadata(node.client), c.maintenanceMetadata ?? c.metadata),
        );
        await eventually(async () =>
          assert.deepEqual(
            (await resourceSpecs(node.client, "network", "HostnameStatuses.net.talos.dev")).get("hostname"),
            c.hostname,
          ),
        );
        assert.match(node.output(), new RegExp(`platform ${platform} gives no user data; entering maintenance mode`));
        await on(node, async () => c.checkWithoutUserData?.(node.client));
      } finally {
        await node.stop();
      }
    });
  });
}
