// DHCPv6 end to end: dnsmasq serves DHCPv6 in one network namespace, our DHCPv6
// operator and the network controllers (the netlink kernel backend) run in another
// (joined by a veth pair). DHCPv6 is asked for as a nocloud network-config does it
// (`dhcp6: true`): the platform layer's dhcp6 OperatorSpec starts the client. Without rapid commit the client goes SOLICIT, ADVERTISE,
// REQUEST, REPLY; it renews at T1 (the operator's timers run 30x fast so T1 = 60 s
// comes after 2 s). The leased address becomes an operator-layer AddressSpec that
// network.AddressSpecController puts into the kernel (checked with `ip -j addr`), and
// dnsmasq's DNS and NTP servers operator-layer specs; the address is released on stop.
// A second run asks for DHCPv6 from the machine config instead, the link found by
// `deviceSelector.hardwareAddr` under a name the config never mentions.
// This file is also the entry the client namespace runs (BASALT_DHCP6_NODE=1).
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Dhcp6OperatorController } from "../../agent/src/controllers/network/dhcp6-operator.js";
import { Observed } from "../../agent/src/controllers/index.js";
import { networkControllers } from "../../agent/src/controllers/network/index.js";
import { DevicesStatusController } from "../../agent/src/controllers/runtime/devices-status.js";
import {
  PlatformConfigController,
  type PlatformNetwork,
} from "../../agent/src/controllers/runtime/platform-network.js";
import { parseNocloudNetwork } from "../../agent/src/network/nocloud-network.js";
import { loadConfig } from "../../agent/src/config/load.js";
import { registerCatalog } from "../../agent/src/resources/catalog/index.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../agent/src/resources/catalog/config.js";
import {
  NETWORK_CONFIG_NAMESPACE,
  NETWORK_NAMESPACE,
  networkDefinitions,
} from "../../agent/src/resources/catalog/network.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { NetlinkNetKernel } from "../../agent/src/sys/net-netlink.js";
import { pathsAt } from "../../agent/src/sys/paths.js";
import { canRunNetns, ip } from "./helpers/netns.js";
import { stopProcess } from "./helpers/sandbox.js";

const PREFIX = "fd00:214:64";

if (process.env.BASALT_DHCP6_NODE === "1") {
  await runNode(process.env.BASALT_DHCP6_LINK!, process.env.BASALT_DHCP6_ROOT!, process.env.BASALT_DHCP6_SELECT_MAC);
} else {
  defineTests();
}

/** The client side, inside its namespace: prints what the operator publishes after every change. */
async function runNode(link: string, root: string, selectMac: string | undefined): Promise<void> {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  for (const c of networkControllers({ kernel: new NetlinkNetKernel(), paths: pathsAt(root) })) runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: false }));
  if (selectMac) {
    const config = [
      "version: v1alpha1",
      "machine:",
      "    type: worker",
      "    network:",
      "        interfaces:",
      `            - deviceSelector: {hardwareAddr: "${selectMac}"}`,
      "              dhcp: true",
      "              dhcpOptions: {ipv4: false, ipv6: true}",
      "",
    ].join("\n");
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () =>
      loadConfig(Buffer.from(config)),
    );
  } else {
    runtime.register(
      new PlatformConfigController(
        new Observed<PlatformNetwork | undefined>({
          nocloud: parseNocloudNetwork(`version: 2\nethernets:\n  ${link}:\n    dhcp6: true\n`)!,
        }),
      ),
    );
  }
  const fast = 30;
  const operator = new Dhcp6OperatorController({
    rapidCommit: false,
    timers: {
      now: () => Date.now() * fast,
      setTimeout: (fn, ms) => setTimeout(fn, ms / fast),
      clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
    },
  });
  runtime.register(operator);
  const ac = new AbortController();
  runtime.start(ac.signal);
  const report = () => {
    const specs = (type: string, ns = NETWORK_CONFIG_NAMESPACE) =>
      Object.fromEntries(state.list(ns, type).map((r) => [r.metadata.id, r.spec]));
    const lease = operator.leases().get(link);
    process.stdout.write(
      JSON.stringify({
        lease,
        addressSpecs: specs("AddressSpecs.net.talos.dev"),
        addressStatuses: specs("AddressStatuses.net.talos.dev", NETWORK_NAMESPACE),
        resolvers: specs("ResolverSpecs.net.talos.dev"),
        timeservers: specs("TimeServerSpecs.net.talos.dev"),
        operators: Object.keys(specs("OperatorSpecs.net.talos.dev")),
      }) + "\n",
    );
  };
  for (const type of ["ResolverSpecs.net.talos.dev", "TimeServerSpecs.net.talos.dev", "AddressSpecs.net.talos.dev"])
    state.watch({ namespace: NETWORK_CONFIG_NAMESPACE, type }, { signal: ac.signal }, () => setTimeout(report, 20));
  state.watch({ namespace: NETWORK_NAMESPACE, type: "AddressStatuses.net.talos.dev" }, { signal: ac.signal }, () =>
    setTimeout(report, 20),
  );
  process.on("SIGTERM", () => {
    ac.abort(); // stops the client with a RELEASE
    setTimeout(() => process.exit(0), 1500).unref();
  });
  await new Promise<void>((resolve) => ac.signal.addEventListener("abort", () => resolve(), { once: true }));
}

function defineTests(): void {
  const tag = randomBytes(3).toString("hex");
  const ns = { server: `t6-srv-${tag}`, client: `t6-cli-${tag}` };
  const skip = canRunNetns();
  let root = "";
  let dnsmasq: ChildProcess | undefined;
  let node: ChildProcess | undefined;

  before(() => {
    if (skip) return;
    root = mkdtempSync(path.join(os.tmpdir(), "basalt-dhcp6-"));
    ip("netns", "add", ns.server);
    ip("netns", "add", ns.client);
    ip("-n", ns.server, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", ns.client);
    ip("-n", ns.server, "addr", "add", `${PREFIX}::1/64`, "dev", "eth0", "nodad");
    for (const n of Object.values(ns)) {
      ip("-n", n, "link", "set", "lo", "up");
      ip("-n", n, "link", "set", "eth0", "up");
    }
    dnsmasq = spawn(
      "ip",
      [
        "netns",
        "exec",
        ns.server,
        "dnsmasq",
        "-k",
        "--no-resolv",
        "--no-hosts",
        "--port=0",
        "--bind-interfaces",
        "--interface=eth0",
        `--dhcp-range=${PREFIX}::100,${PREFIX}::1ff,64,2m`,
        `--dhcp-option=option6:dns-server,[${PREFIX}::53]`,
        `--dhcp-option=option6:ntp-server,[${PREFIX}::123]`,
        "--log-dhcp",
        `--dhcp-leasefile=${root}/leases`,
        `--pid-file=${root}/pid`,
        `--log-facility=${root}/dnsmasq.log`,
      ],
      { stdio: "ignore" },
    );
    process.once("exit", () => dnsmasq?.kill("SIGKILL"));
  });

  after(async () => {
    if (node) await stopProcess(node);
    if (dnsmasq) await stopProcess(dnsmasq);
    if (skip) return;
    for (const n of Object.values(ns)) execFileSync("ip", ["netns", "del", n], { stdio: "ignore" });
    rmSync(root, { recursive: true, force: true });
  });

  const dnsmasqLog = () => readFileSync(path.join(root, "dnsmasq.log"), "utf8");

  async function until<T>(what: string, get: () => T | undefined, ms: number): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = get();
      if (v !== undefined) return v;
      if (Date.now() > end)
        throw new Error(
          `timed out waiting for ${what}\n--- dnsmasq:\n${dnsmasqLog().split("\n").slice(-30).join("\n")}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test("dnsmasq leases a DHCPv6 address (solicit, advertise, request, reply), the operator reports it with DNS and NTP specs, renews at T1, releases on stop", {
    skip,
    timeout: 90_000,
  }, async () => {
    const script = fileURLToPath(import.meta.url);
    node = spawn("ip", ["netns", "exec", ns.client, process.execPath, script], {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        BASALT_DHCP6_NODE: "1",
        BASALT_DHCP6_LINK: "eth0",
        BASALT_DHCP6_ROOT: root,
        BASALT_LOG_LEVEL: "warn",
      },
    });
    let out = "";
    node.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    node.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    process.once("exit", () => node?.kill("SIGKILL"));

    type Snapshot = {
      lease?: {
        addresses: { address: string; prefixLen: number; linkName: string }[];
        dnsServers: string[];
        timeServers: string[];
      };
      addressSpecs: Record<string, unknown>;
      addressStatuses: Record<string, { address: string }>;
      resolvers: Record<string, unknown>;
      timeservers: Record<string, unknown>;
    };
    const snapshots = () =>
      out
        .split("\n")
        .filter((l) => l.startsWith('{"lease"'))
        .map((l) => JSON.parse(l) as Snapshot);
    const snapshot = await until(
      "the lease in the specs",
      () => snapshots().find((s) => s.lease && Object.keys(s.resolvers).length > 0),
      30_000,
    );
    const leased = /DHCPREPLY\(eth0\) (\S+) /.exec(dnsmasqLog())?.[1];
    assert.ok(leased, "dnsmasq logged the address it gave");
    assert.deepEqual(snapshot.addressSpecs, {
      "default/lo/127.0.0.1/8": {
        address: "127.0.0.1/8",
        linkName: "lo",
        family: "inet4",
        scope: "host",
        flags: "permanent",
        layer: "default",
      },
      [`dhcp6/eth0/eth0/${leased}/128`]: {
        address: `${leased}/128`,
        linkName: "eth0",
        family: "inet6",
        scope: "global",
        flags: "permanent",
        layer: "operator",
      },
    });
    // network.AddressSpecController put it into the kernel; AddressStatus reports it back.
    const status = await until(
      "the address in AddressStatus",
      () => snapshots().find((s) => Object.hasOwn(s.addressStatuses, `eth0/${leased}/128`)),
      30_000,
    );
    assert.equal(status.addressStatuses[`eth0/${leased}/128`]!.address, `${leased}/128`);
    const kernel = JSON.parse(
      execFileSync("ip", ["-n", ns.client, "-j", "-6", "addr", "show", "dev", "eth0", "scope", "global"], {
        encoding: "utf8",
      }),
    ) as { addr_info: { local: string; prefixlen: number }[] }[];
    // With a scope filter `ip -j` leaves an empty entry for each address filtered out.
    assert.deepEqual(
      kernel[0]!.addr_info.filter((a) => a.local).map((a) => `${a.local}/${a.prefixlen}`),
      [`${leased}/128`],
    );
    assert.deepEqual(snapshot.lease!.addresses, [{ linkName: "eth0", address: leased, prefixLen: 128 }]);
    assert.deepEqual(snapshot.lease!.dnsServers, [`${PREFIX}::53`]);
    assert.deepEqual(snapshot.lease!.timeServers, [`${PREFIX}::123`]);
    assert.deepEqual(snapshot.resolvers, {
      "default/resolvers": { dnsServers: ["1.1.1.1", "8.8.8.8"], layer: "default" },
      "dhcp6/eth0/resolvers": { dnsServers: [`${PREFIX}::53`], layer: "operator" },
    });
    assert.deepEqual(snapshot.timeservers, {
      "default/timeservers": { timeServers: ["time.cloudflare.com"], layer: "default" },
      "dhcp6/eth0/timeservers": { timeServers: [`${PREFIX}::123`], layer: "operator" },
    });
    // The kinds in the order they first appear: a SOLICIT retransmitted before the ADVERTISE
    // came (the timers run 30x fast, a loaded host answers late) is still the same exchange.
    const exchange = [...new Set(dnsmasqLog().match(/DHCP(SOLICIT|ADVERTISE|REQUEST|REPLY)\(eth0\)/g))].slice(0, 4);
    assert.deepEqual(exchange, ["DHCPSOLICIT(eth0)", "DHCPADVERTISE(eth0)", "DHCPREQUEST(eth0)", "DHCPREPLY(eth0)"]);

    await until("a RENEW at T1", () => (/DHCPRENEW\(eth0\)/.test(dnsmasqLog()) ? true : undefined), 30_000);
    await stopProcess(node);
    node = undefined;
    await until(
      "the RELEASE",
      () => (new RegExp(`DHCPRELEASE\\(eth0\\)`).test(dnsmasqLog()) ? true : undefined),
      10_000,
    );
    assert.equal(
      (dnsmasqLog().match(/DHCPREPLY\(eth0\) (\S+) /g) ?? []).filter((l) => !l.includes(leased)).length,
      0,
      "every reply gave the same address",
    );
  });

  test("DHCPv6 asked for by the machine config on the link its deviceSelector's hardwareAddr picks (a name the config never gives)", {
    skip,
    timeout: 90_000,
  }, async () => {
    // The same veth end, renamed: only its MAC ties it to the config.
    const name = "s3net6sel";
    ip("-n", ns.client, "link", "set", "eth0", "down");
    ip("-n", ns.client, "link", "set", "eth0", "name", name);
    ip("-n", ns.client, "link", "set", name, "up");
    const mac = (JSON.parse(ip("-n", ns.client, "-j", "link", "show", "dev", name)) as { address: string }[])[0]!
      .address;
    const repliesBefore = (dnsmasqLog().match(/DHCPREPLY\(eth0\) \S+ /g) ?? []).length;
    const script = fileURLToPath(import.meta.url);
    node = spawn("ip", ["netns", "exec", ns.client, process.execPath, script], {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        BASALT_DHCP6_NODE: "1",
        BASALT_DHCP6_LINK: name,
        BASALT_DHCP6_SELECT_MAC: mac,
        BASALT_DHCP6_ROOT: root,
        BASALT_LOG_LEVEL: "warn",
      },
    });
    let out = "";
    node.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    node.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    type Snapshot = {
      lease?: { addresses: { address: string; linkName: string }[] };
      addressStatuses: Record<string, unknown>;
      operators: string[];
    };
    const snapshots = () =>
      out
        .split("\n")
        .filter((l) => l.startsWith('{"lease"'))
        .map((l) => JSON.parse(l) as Snapshot);
    const leased = await until(
      "a new DHCPv6 reply",
      () =>
        /DHCPREPLY\(eth0\) (\S+) /.exec(
          (dnsmasqLog().match(/DHCPREPLY\(eth0\) \S+ /g) ?? [])[repliesBefore] ?? "",
        )?.[1],
      30_000,
    );
    const snapshot = await until(
      "the address in AddressStatus",
      () => snapshots().find((s) => Object.hasOwn(s.addressStatuses, `${name}/${leased}/128`)),
      30_000,
    );
    assert.deepEqual(
      snapshot.lease!.addresses.map((a) => `${a.linkName} ${a.address}`),
      [`${name} ${leased}`],
    );
    assert.ok(
      snapshot.operators.includes(`configuration/dhcp6/${name}`),
      `operators: ${snapshot.operators.join(", ")}`,
    );
    assert.ok(
      !snapshot.operators.some((o) => o.includes("dhcp4") && o.includes(name)),
      "dhcpOptions.ipv4: false starts no DHCPv4 there",
    );
    const kernel = JSON.parse(
      execFileSync("ip", ["-n", ns.client, "-j", "-6", "addr", "show", "dev", name, "scope", "global"], {
        encoding: "utf8",
      }),
    ) as { addr_info: { local: string; prefixlen: number }[] }[];
    assert.deepEqual(
      kernel[0]!.addr_info.filter((a) => a.local).map((a) => `${a.local}/${a.prefixlen}`),
      [`${leased}/128`],
    );
    await stopProcess(node);
    node = undefined;
  });
}
