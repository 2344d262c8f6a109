// DHCP end to end: a real dnsmasq in one network namespace, our DHCP client and
// network controllers (real iproute2 kernel backend) in another, joined by a veth
// pair. This file is also the entry the client namespace runs (BASALT_NET_NODE=1):
// it prints a JSON snapshot of the network resources once the lease is in, and
// releases the lease on SIGTERM.

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { networkControllers } from "../../agent/src/controllers/network/index.js";
import { networkDefinitions } from "../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { registerDefinitions } from "../../agent/src/resources/definitions.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { IprouteNetKernel } from "../../agent/src/sys/net-iproute.js";
import { pathsAt } from "../../agent/src/sys/paths.js";

const SUBNET = "10.213.7";
const CLIENT_MAC = "02:b5:00:00:07:37";
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
  await runNode(process.env.BASALT_NET_LINK!, process.env.BASALT_NET_ROOT!);
} else {
  defineTests();
}

/** The client side, inside its namespace. */
async function runNode(linkName: string, root: string): Promise<void> {
  const state = new ResourceState();
  registerDefinitions(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const kernel = new IprouteNetKernel();
  for (const c of networkControllers({ kernel, paths: pathsAt(root), dhcpOptions: { links: [linkName] } })) runtime.register(c);
  const ac = new AbortController();
  runtime.start(ac.signal);
  const snapshot = () => {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [k, type] of Object.entries(TYPES)) {
      out[k] = Object.fromEntries(state.list("network", type).map((r) => [r.metadata.id, r.spec]));
    }
    return out;
  };
  let reported = false;
  const check = () => {
    const s = snapshot();
    const dns = (s.resolver?.resolvers as { dnsServers?: string[] } | undefined)?.dnsServers ?? [];
    const hasAddr = Object.keys(s.address ?? {}).some((id) => id.startsWith(`${linkName}/${SUBNET}.`));
    const hasRoute = Object.keys(s.route ?? {}).includes(`inet4/${SUBNET}.1//1024`);
    const hostname = (s.hostname?.hostname as { hostname?: string } | undefined)?.hostname;
    const hasDefault = ((s.nodeaddress?.default as { addresses?: string[] } | undefined)?.addresses ?? []).length > 0;
    const ntp = (s.timeserver?.timeservers as { timeServers?: string[] } | undefined)?.timeServers ?? [];
    if (!reported && dns.includes(`${SUBNET}.53`) && hasAddr && hasRoute && hasDefault && ntp.length > 0 && hostname === "node-it") {
      reported = true;
      process.stdout.write(JSON.stringify({ ready: s }) + "\n");
    }
  };
  for (const type of Object.values(TYPES)) state.watch({ namespace: "network", type }, { signal: ac.signal }, check);
  process.on("SIGTERM", () => {
    ac.abort(); // stops the DHCP clients with a DHCPRELEASE
    setTimeout(() => process.exit(0), 1500).unref();
  });
  await new Promise<void>((resolve) => ac.signal.addEventListener("abort", () => resolve(), { once: true }));
}

function canRunNetns(): string | undefined {
  if (process.getuid?.() !== 0) return "needs root to create network namespaces";
  try {
    execFileSync("ip", ["netns", "list"], { stdio: "ignore" });
  } catch {
    return "`ip netns` is not available";
  }
  return undefined;
}

function ip(...args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8" });
}

function waitForLine(child: ChildProcess, pred: (line: string) => boolean, ms: number, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    child.stdout!.on("data", (chunk: Buffer) => {
      buf += chunk.toString();
      for (const line of buf.split("\n")) {
        if (pred(line)) {
          clearTimeout(timer);
          resolve(line);
        }
      }
      buf = buf.slice(buf.lastIndexOf("\n") + 1);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what}: process exited with ${code}`));
    });
  });
}

function defineTests(): void {
  const skip = canRunNetns();
  test("DHCP lease from dnsmasq lands in the kernel and in the network resources", { skip: skip ?? false, timeout: 90_000 }, async (t) => {
    const tag = randomBytes(3).toString("hex");
    const srvNs = `bsl-srv-${tag}`;
    const cliNs = `bsl-cli-${tag}`;
    const srvLink = `bs${tag}`;
    const cliLink = `bc${tag}`;
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
    ip("link", "add", srvLink, "netns", srvNs, "type", "veth", "peer", "name", cliLink, "netns", cliNs);
    ip("-n", cliNs, "link", "set", cliLink, "address", CLIENT_MAC);
    ip("-n", srvNs, "addr", "add", `${SUBNET}.1/24`, "dev", srvLink);
    ip("-n", srvNs, "link", "set", srvLink, "up");
    ip("-n", cliNs, "link", "set", "lo", "up");

    const leaseFile = path.join(dir, "dnsmasq.leases");
    const dnsmasq = spawn(
      "ip",
      [
        "netns", "exec", srvNs, "dnsmasq", "--no-daemon", "--conf-file=/dev/null", "--port=0", "--no-ping", "--log-dhcp",
        `--interface=${srvLink}`, "--bind-interfaces", `--dhcp-leasefile=${leaseFile}`,
        `--dhcp-range=${SUBNET}.50,${SUBNET}.60,255.255.255.0,1h`,
        `--dhcp-host=${CLIENT_MAC},${SUBNET}.55,node-it`,
        `--dhcp-option=option:router,${SUBNET}.1`,
        `--dhcp-option=option:dns-server,${SUBNET}.53`,
        `--dhcp-option=option:ntp-server,${SUBNET}.123`,
        "--dhcp-option=option:domain-name,itest.lan",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    children.push(dnsmasq);
    let dnsmasqLog = "";
    dnsmasq.stderr!.on("data", (c: Buffer) => (dnsmasqLog += c.toString()));

    const entry = fileURLToPath(import.meta.url);
    const node = spawn("ip", ["netns", "exec", cliNs, process.execPath, entry], {
      env: { ...process.env, BASALT_NET_NODE: "1", BASALT_NET_LINK: cliLink, BASALT_NET_ROOT: dir, BASALT_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(node);

    let line: string;
    try {
      line = await waitForLine(node, (l) => l.startsWith('{"ready"'), 60_000, "the lease in the resources");
    } catch (err) {
      throw new Error(`${(err as Error).message}\ndnsmasq log:\n${dnsmasqLog}`);
    }
    const snap = JSON.parse(line).ready as Record<string, Record<string, Record<string, unknown>>>;

    // Resources, as `talosctl get addresses/routes/resolvers/hostname/timeservers` would show them.
    const addr = snap.address![`${cliLink}/${SUBNET}.55/24`];
    assert.ok(addr, `AddressStatus ${cliLink}/${SUBNET}.55/24 in ${Object.keys(snap.address!).join(", ")}`);
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
    const addrs = JSON.parse(ip("-n", cliNs, "-j", "addr", "show", "dev", cliLink)) as { addr_info: { family: string; local: string; prefixlen: number }[] }[];
    assert.ok(addrs[0]!.addr_info.some((a) => a.family === "inet" && a.local === `${SUBNET}.55` && a.prefixlen === 24));
    const routes = JSON.parse(ip("-n", cliNs, "-j", "-4", "route", "show")) as { dst: string; gateway?: string; metric?: number; dev: string }[];
    assert.ok(routes.some((r) => r.dst === "default" && r.gateway === `${SUBNET}.1` && r.metric === 1024 && r.dev === cliLink), JSON.stringify(routes));
    assert.equal(routes.some((r) => r.dst === "255.255.255.255"), false, "the temporary broadcast route is gone");
    // resolv.conf follows the statuses asynchronously (the search domain comes with the hostname).
    const want = `nameserver ${SUBNET}.53\n\nsearch itest.lan\n`;
    let resolv = "";
    for (let i = 0; i < 100 && resolv !== want; i++) {
      resolv = await readFile(path.join(dir, "system", "etc", "resolv.conf"), "utf8").catch(() => "");
      if (resolv !== want) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(resolv, want);
    assert.match(await readFile(leaseFile, "utf8"), new RegExp(`${SUBNET.replaceAll(".", "\\.")}\\.55`));

    // Stopping the node releases the lease: dnsmasq drops it from its lease file.
    node.kill("SIGTERM");
    await new Promise((r) => node.once("exit", r));
    let leases = "";
    for (let i = 0; i < 100; i++) {
      leases = await readFile(leaseFile, "utf8");
      if (!leases.includes(`${SUBNET}.55`)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(leases.includes(`${SUBNET}.55`), false, `lease still held after release:\n${leases}\n${dnsmasqLog}`);
  });
}
