// DHCP end to end: a real dnsmasq in one network namespace, our DHCP client and
// network controllers (the rtnetlink kernel backend) in another, joined by a veth
// pair. This file is also the entry the client namespace runs (BASALT_NET_NODE=1):
// it prints a JSON snapshot of the network resources once the lease is in, and
// releases the lease on SIGTERM.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { networkControllers } from "../../agent/src/controllers/network/index.js";
import { DevicesStatusController } from "../../agent/src/controllers/runtime/devices-status.js";
import { devicesStatusDefinition } from "../../agent/src/resources/catalog/runtime.js";
import { networkDefinitions } from "../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { registerDefinitions } from "../../agent/src/resources/definitions.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { NetlinkNetKernel } from "../../agent/src/sys/net-netlink.js";
import { pathsAt } from "../../agent/src/sys/paths.js";
import { canRunNetns, ip } from "./helpers/netns.js";

const SUBNET = "10.213.7";
const TYPES = {
  address: "AddressStatuses.net.talos.dev",
  route: "RouteStatuses.net.talos.dev",
  resolver: "ResolverStatuses.net.talos.dev",
  hostname: "HostnameStatuses.net.talos.dev",
  timeserver: "TimeServerStatuses.net.talos.dev",
  link: "LinkStatuses.net.talos.dev",
  nodeaddress: "NodeAddresses.net.talos.dev",
};

if (process.env.BASALT_NET_NODE === "1") {
  await runNode(process.env.BASALT_NET_LINKS!.split(","), process.env.BASALT_NET_ROOT!);
} else {
  defineTests();
}

/** The client side, inside its namespace: prints a snapshot line after every change. */
async function runNode(links: string[], root: string): Promise<void> {
  const state = new ResourceState();
  registerDefinitions(state, [...networkDefinitions, devicesStatusDefinition]);
  const runtime = new ControllerRuntime(state);
  const kernel = new NetlinkNetKernel();
  for (const c of networkControllers({
    kernel,
    paths: pathsAt(root),
    cmdline: links.map((l) => `ip=${l}:dhcp`).join(" "),
  }))
    runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: false }));
  const ac = new AbortController();
  runtime.start(ac.signal);
  let timer: NodeJS.Timeout | undefined;
  const report = () => {
    timer = undefined;
    const out: Record<string, Record<string, unknown>> = {};
    for (const [k, type] of Object.entries(TYPES)) {
      out[k] = Object.fromEntries(state.list("network", type).map((r) => [r.metadata.id, r.spec]));
    }
    process.stdout.write(JSON.stringify({ snapshot: out }) + "\n");
  };
  for (const type of Object.values(TYPES)) {
    state.watch({ namespace: "network", type }, { signal: ac.signal }, () => {
      timer ??= setTimeout(report, 50);
    });
  }
  process.on("SIGTERM", () => {
    ac.abort(); // stops the DHCP clients with a DHCPRELEASE
    setTimeout(() => process.exit(0), 1500).unref();
  });
  await new Promise<void>((resolve) => ac.signal.addEventListener("abort", () => resolve(), { once: true }));
}

type Snapshot = Record<string, Record<string, Record<string, unknown>>>;

/** Resolves with the first snapshot the node prints that satisfies pred. */
function waitForSnapshot(
  child: ChildProcess,
  pred: (s: Snapshot) => boolean,
  ms: number,
  what: string,
): Promise<Snapshot> {
  return new Promise((resolve, reject) => {
    let buf = "";
    let last = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; last snapshot: ${last}`)), ms);
    child.stdout!.on("data", (chunk: Buffer) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{"snapshot"')) continue;
        last = line;
        const snap = (JSON.parse(line) as { snapshot: Snapshot }).snapshot;
        if (pred(snap)) {
          clearTimeout(timer);
          resolve(snap);
        }
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what}: process exited with ${code}`));
    });
  });
}

interface Pair {
  srvLink: string;
  cliLink: string;
  subnet: string;
  mac: string;
}

/** Two namespaces, one veth pair per subnet, dnsmasq serving every pair. */
async function setupNetwork(
  t: { after(fn: () => Promise<void>): void },
  subnets: string[],
  extraDnsmasqArgs: string[] = [],
) {
  const tag = randomBytes(3).toString("hex");
  const srvNs = `bsl-srv-${tag}`;
  const cliNs = `bsl-cli-${tag}`;
  const dir = await mkdtemp(path.join(os.tmpdir(), "basalt-net-it-"));
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    for (const ns of [cliNs, srvNs]) {
      try {
        ip("netns", "del", ns);
      } catch {
        // already gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  });
  ip("netns", "add", srvNs);
  ip("netns", "add", cliNs);
  ip("-n", cliNs, "link", "set", "lo", "up");
  const pairs: Pair[] = subnets.map((subnet, i) => ({
    srvLink: `bs${tag}${i}`,
    cliLink: `bc${tag}${i}`,
    subnet,
    mac: `02:b5:00:00:0${i}:37`,
  }));
  const args = [
    "netns",
    "exec",
    srvNs,
    "dnsmasq",
    "--no-daemon",
    "--conf-file=/dev/null",
    "--port=0",
    "--no-ping",
    "--log-dhcp",
    "--bind-interfaces",
    "--dhcp-option=option:domain-name,itest.lan",
    "--log-facility=-",
    ...extraDnsmasqArgs,
  ];
  const leaseFile = path.join(dir, "dnsmasq.leases");
  args.push(`--dhcp-leasefile=${leaseFile}`);
  for (const p of pairs) {
    ip("link", "add", p.srvLink, "netns", srvNs, "type", "veth", "peer", "name", p.cliLink, "netns", cliNs);
    ip("-n", cliNs, "link", "set", p.cliLink, "address", p.mac);
    ip("-n", srvNs, "addr", "add", `${p.subnet}.1/24`, "dev", p.srvLink);
    ip("-n", srvNs, "link", "set", p.srvLink, "up");
    const set = p.srvLink;
    args.push(
      `--interface=${p.srvLink}`,
      `--dhcp-range=set:${set},${p.subnet}.50,${p.subnet}.60,255.255.255.0,1h`,
      `--dhcp-host=${p.mac},${p.subnet}.55${p === pairs[0] ? ",node-it" : ""}`,
      `--dhcp-option=tag:${set},option:router,${p.subnet}.1`,
      `--dhcp-option=tag:${set},option:dns-server,${p.subnet}.53`,
      `--dhcp-option=tag:${set},option:ntp-server,${p.subnet}.123`,
    );
  }
  const dnsmasq = spawn("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
  children.push(dnsmasq);
  const log = { text: "" };
  dnsmasq.stderr!.on("data", (c: Buffer) => (log.text += c.toString()));
  const startNode = () => {
    const node = spawn("ip", ["netns", "exec", cliNs, process.execPath, fileURLToPath(import.meta.url)], {
      env: {
        ...process.env,
        BASALT_NET_NODE: "1",
        BASALT_NET_LINKS: pairs.map((p) => p.cliLink).join(","),
        BASALT_NET_ROOT: dir,
        BASALT_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(node);
    return node;
  };
  return { cliNs, dir, pairs, leaseFile, dnsmasqLog: log, startNode };
}

function defineTests(): void {
  const skip = canRunNetns();
  test("DHCP lease from dnsmasq lands in the kernel and in the network resources", {
    skip: skip ?? false,
    timeout: 90_000,
  }, async (t) => {
    // T1 of 3 s: the client renews (unicast from its new address) while the test runs.
    const net = await setupNetwork(t, [SUBNET], ["--dhcp-option=option:T1,3", "--dhcp-option=option:T2,50"]);
    const cliLink = net.pairs[0]!.cliLink;
    const node = net.startNode();
    const ready = (s: Snapshot) =>
      Object.hasOwn(s.address ?? {}, `${cliLink}/${SUBNET}.55/24`) &&
      Object.hasOwn(s.route ?? {}, `inet4/${SUBNET}.1//1024`) &&
      (s.resolver?.resolvers as { dnsServers?: string[] } | undefined)?.dnsServers?.[0] === `${SUBNET}.53` &&
      (s.timeserver?.timeservers as { timeServers?: string[] } | undefined)?.timeServers?.[0] === `${SUBNET}.123` &&
      (s.hostname?.hostname as { hostname?: string } | undefined)?.hostname === "node-it" &&
      Object.hasOwn(s.nodeaddress ?? {}, "default");
    let snap: Snapshot;
    try {
      snap = await waitForSnapshot(node, ready, 60_000, "the lease in the resources");
    } catch (err) {
      throw new Error(`${(err as Error).message}\ndnsmasq log:\n${net.dnsmasqLog.text}`);
    }

    // Resources, as `talosctl get addresses/routes/resolvers/hostname/timeservers` would show them.
    const addr = snap.address![`${cliLink}/${SUBNET}.55/24`]!;
    assert.equal(addr.linkName, cliLink);
    assert.equal(addr.family, "inet4");
    assert.equal(addr.scope, "global");
    const route = snap.route![`inet4/${SUBNET}.1//1024`]!;
    assert.equal(route.gateway, `${SUBNET}.1`);
    assert.equal(route.dst, "");
    assert.equal(route.outLinkName, cliLink);
    assert.equal(route.protocol, "boot");
    assert.deepEqual(snap.resolver!.resolvers, { dnsServers: [`${SUBNET}.53`] });
    assert.deepEqual(snap.hostname!.hostname, { hostname: "node-it", domainname: "itest.lan" });
    assert.deepEqual(snap.timeserver!.timeservers, { timeServers: [`${SUBNET}.123`] });
    assert.deepEqual(snap.nodeaddress!.default, { addresses: [`${SUBNET}.55/24`] });
    assert.equal(snap.link![cliLink]!.operationalState, "up");

    // The kernel of the client namespace.
    const addrs = JSON.parse(ip("-n", net.cliNs, "-j", "addr", "show", "dev", cliLink)) as {
      addr_info: { family: string; local: string; prefixlen: number }[];
    }[];
    assert.ok(addrs[0]!.addr_info.some((a) => a.family === "inet" && a.local === `${SUBNET}.55` && a.prefixlen === 24));
    const routes = JSON.parse(ip("-n", net.cliNs, "-j", "-4", "route", "show")) as {
      dst: string;
      gateway?: string;
      metric?: number;
      dev: string;
    }[];
    assert.ok(
      routes.some((r) => r.dst === "default" && r.gateway === `${SUBNET}.1` && r.metric === 1024 && r.dev === cliLink),
      JSON.stringify(routes),
    );
    assert.equal(
      routes.some((r) => r.dst === "255.255.255.255"),
      false,
      "the temporary broadcast route is gone",
    );
    // resolv.conf follows the statuses asynchronously (the search domain comes with the hostname).
    const want = `nameserver ${SUBNET}.53\n\nsearch itest.lan\n`;
    let resolv = "";
    for (let i = 0; i < 100 && resolv !== want; i++) {
      resolv = await readFile(path.join(net.dir, "system", "etc", "resolv.conf"), "utf8").catch(() => "");
      if (resolv !== want) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(resolv, want);
    assert.match(await readFile(net.leaseFile, "utf8"), new RegExp(`${SUBNET.replaceAll(".", "\\.")}\\.55`));

    // The renewal at T1 is answered by the server (a second DHCPACK for the address).
    const acks = () =>
      net.dnsmasqLog.text.split("\n").filter((l) => l.includes("DHCPACK") && l.includes(`${SUBNET}.55`)).length;
    for (let i = 0; i < 200 && acks() < 2; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(acks() >= 2, `no renewal seen:\n${net.dnsmasqLog.text}`);
    assert.ok(Object.hasOwn(snap.address!, `${cliLink}/${SUBNET}.55/24`));

    // Stopping the node releases the lease: dnsmasq drops it from its lease file.
    node.kill("SIGTERM");
    await new Promise((r) => node.once("exit", r));
    let leases = "";
    for (let i = 0; i < 100; i++) {
      leases = await readFile(net.leaseFile, "utf8");
      if (!leases.includes(`${SUBNET}.55`)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(
      leases.includes(`${SUBNET}.55`),
      false,
      `lease still held after release:\n${leases}\n${net.dnsmasqLog.text}`,
    );
  });

  test("DHCP on two links at once: each link gets its own lease and default route", {
    skip: skip ?? false,
    timeout: 90_000,
  }, async (t) => {
    const second = "10.213.8";
    const net = await setupNetwork(t, [SUBNET, second]);
    const [a, b] = net.pairs as [Pair, Pair];
    const node = net.startNode();
    const ready = (s: Snapshot) =>
      Object.hasOwn(s.address ?? {}, `${a.cliLink}/${SUBNET}.55/24`) &&
      Object.hasOwn(s.address ?? {}, `${b.cliLink}/${second}.55/24`) &&
      Object.hasOwn(s.route ?? {}, `inet4/${SUBNET}.1//1024`) &&
      Object.hasOwn(s.route ?? {}, `inet4/${second}.1//1024`) &&
      ((s.resolver?.resolvers as { dnsServers?: string[] } | undefined)?.dnsServers ?? []).length === 2;
    let snap: Snapshot;
    try {
      snap = await waitForSnapshot(node, ready, 60_000, "both leases in the resources");
    } catch (err) {
      throw new Error(`${(err as Error).message}\ndnsmasq log:\n${net.dnsmasqLog.text}`);
    }
    assert.equal(snap.route![`inet4/${SUBNET}.1//1024`]!.outLinkName, a.cliLink);
    assert.equal(snap.route![`inet4/${second}.1//1024`]!.outLinkName, b.cliLink);
    // Same-layer resolvers of both links are combined, ordered by spec id (link name).
    assert.deepEqual(snap.resolver!.resolvers, { dnsServers: [`${SUBNET}.53`, `${second}.53`] });
    const routes = JSON.parse(ip("-n", net.cliNs, "-j", "-4", "route", "show", "default")) as {
      gateway?: string;
      dev: string;
    }[];
    assert.deepEqual(
      routes.map((r) => `${r.dev} ${r.gateway}`).sort(),
      [`${a.cliLink} ${SUBNET}.1`, `${b.cliLink} ${second}.1`].sort(),
    );
  });
}
