import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { networkControllers } from "../../../agent/src/controllers/network/index.js";
import { DevicesStatusController } from "../../../agent/src/controllers/runtime/devices-status.js";
import type { DhcpTransport } from "../../../agent/src/network/dhcp4/client.js";
import {
  BOOTREPLY,
  MessageType,
  Option,
  decodeMessage,
  encodeMessage,
  ipToBuffer,
  parseOptions,
  u32Buffer,
} from "../../../agent/src/network/dhcp4/packet.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeNetKernel } from "../sys/net-fake.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";

/** A DHCP server behind a fake transport: OFFER for DISCOVER, ACK for REQUEST. */
function fakeServerTransport(offers: string[]): (link: string) => Promise<DhcpTransport> {
  return async (link) => {
    let handler: ((p: Buffer) => void) | undefined;
    return {
      async send(packet) {
        const req = decodeMessage(packet);
        const type = parseOptions(req.options).messageType;
        const answer =
          type === MessageType.Discover
            ? MessageType.Offer
            : type === MessageType.Request
              ? MessageType.Ack
              : undefined;
        if (answer === undefined) return;
        offers.push(link);
        const reply = {
          op: BOOTREPLY,
          xid: req.xid,
          secs: 0,
          flags: req.flags,
          ciaddr: "0.0.0.0",
          yiaddr: "10.1.0.50",
          siaddr: "0.0.0.0",
          giaddr: "0.0.0.0",
          chaddr: req.chaddr,
          options: new Map<number, Buffer>([
            [Option.MessageType, Buffer.from([answer])],
            [Option.ServerIdentifier, ipToBuffer("10.1.0.1")],
            [Option.SubnetMask, ipToBuffer("255.255.255.0")],
            [Option.Router, ipToBuffer("10.1.0.1")],
            [Option.DomainNameServer, ipToBuffer("10.1.0.53")],
            [Option.NTPServers, ipToBuffer("10.1.0.123")],
            [Option.HostName, Buffer.from("node-a")],
            [Option.DomainName, Buffer.from("lab.test")],
            [Option.LeaseTime, u32Buffer(3600)],
          ]),
        };
        setImmediate(() => handler?.(encodeMessage(reply)));
      },
      onReceive(h) {
        handler = h;
      },
      close() {},
    };
  };
}

async function waitFor(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test("with no config: DHCP on the physical link, statuses published, resolv.conf written", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "basalt-net-"));
  const kernel = new FakeNetKernel();
  await kernel.setLinkUp("lo", false);
  kernel.addLink({ name: "eth0", hardwareAddr: "02:00:00:00:00:01" });
  kernel.addLink({ name: "veth9", kind: "veth" });
  const state = new ResourceState();
  const runtime = new ControllerRuntime(state);
  const served: string[] = [];
  const paths = pathsAt(dir);
  for (const c of networkControllers({
    kernel,
    paths,
    linkDetails: async () => ({}),
    dhcpOptions: { transport: fakeServerTransport(served) },
  }))
    runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: false }));
  const ac = new AbortController();
  t.after(async () => {
    ac.abort();
    await runtime.whenIdle();
    await rm(dir, { recursive: true, force: true });
  });
  runtime.start(ac.signal);

  const spec = <S>(type: string, id: string, ns = "network") => state.get<S>(ns, type, id)?.spec;
  await waitFor(
    "DHCP resolvers",
    () => spec<{ dnsServers: string[] }>("ResolverStatuses.net.talos.dev", "resolvers")?.dnsServers[0] === "10.1.0.53",
  );

  assert.ok(kernel.calls.includes("setLinkUp eth0 true"), "the physical link is brought up");
  assert.ok(kernel.calls.includes("setLinkUp lo true"), "so is the loopback");
  assert.ok(!kernel.calls.some((c) => c.startsWith("setLinkUp veth9")), "virtual links are left alone");
  assert.deepEqual([...new Set(served)], ["eth0"]);
  await waitFor(
    "the lease applied by the spec controllers",
    () =>
      kernel.addresses.some((a) => a.linkName === "eth0" && a.address === "10.1.0.50" && a.prefixLen === 24) &&
      kernel.routes.some(
        (r) => r.dstLen === 0 && r.gateway === "10.1.0.1" && r.priority === 1024 && r.outLinkName === "eth0",
      ),
  );
  assert.deepEqual(state.get("network", "OperatorSpecs.net.talos.dev", "dhcp4/eth0")?.spec, {
    operator: "dhcp4",
    linkName: "eth0",
    requireUp: true,
    dhcp4: { routeMetric: 1024 },
    layer: "default",
  });
  assert.equal(
    state.get("network", "OperatorSpecs.net.talos.dev", "dhcp4/veth9"),
    undefined,
    "no DHCP on a virtual link",
  );
  assert.deepEqual(state.get("network-config", "AddressSpecs.net.talos.dev", "dhcp4/eth0/eth0/10.1.0.50/24")?.spec, {
    address: "10.1.0.50/24",
    linkName: "eth0",
    family: "inet4",
    scope: "global",
    flags: "permanent",
    layer: "operator",
  });

  await waitFor(
    "address and route statuses",
    () =>
      state.get("network", "AddressStatuses.net.talos.dev", "eth0/10.1.0.50/24") !== undefined &&
      state.get("network", "RouteStatuses.net.talos.dev", "inet4/10.1.0.1//1024") !== undefined &&
      spec<{ addresses: string[] }>("NodeAddresses.net.talos.dev", "default")?.addresses[0] === "10.1.0.50/24",
  );
  const link = spec<{ operationalState: string; flags: string; type: string }>("LinkStatuses.net.talos.dev", "eth0")!;
  assert.equal(link.operationalState, "up");
  assert.equal(link.type, "ether");
  assert.match(link.flags, /^UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP$/);
  assert.equal(state.get("network", "LinkStatuses.net.talos.dev", "veth9") !== undefined, true);
  assert.deepEqual(spec("NodeAddresses.net.talos.dev", "current"), { addresses: ["10.1.0.50/24"] });
  await waitFor("network status ready", () => {
    const st = spec<Record<string, boolean>>("NetworkStatuses.net.talos.dev", "status");
    return st !== undefined && Object.values(st).every(Boolean);
  });

  await waitFor(
    "hostname from DHCP",
    () => spec<{ hostname: string }>("HostnameStatuses.net.talos.dev", "hostname")?.hostname === "node-a",
  );
  assert.deepEqual(spec("HostnameStatuses.net.talos.dev", "hostname"), { hostname: "node-a", domainname: "lab.test" });
  assert.deepEqual(spec("TimeServerStatuses.net.talos.dev", "timeservers"), { timeServers: ["10.1.0.123"] });
  // The default layer (from the default node address) sits underneath.
  await waitFor(
    "default hostname spec",
    () => state.get("network-config", "HostnameSpecs.net.talos.dev", "default/hostname") !== undefined,
  );
  const resolvConf = path.join(paths.etc, "resolv.conf");
  let text = "";
  await waitFor("resolv.conf with the search domain", () => {
    void readFile(resolvConf, "utf8").then(
      (t) => (text = t),
      () => undefined,
    );
    return text.includes("search");
  });
  assert.equal(text, "nameserver 10.1.0.53\n\nsearch lab.test\n");

  // Cable pulled: the operator stops, its address and contributions go, defaults return.
  kernel.setCarrier("eth0", false);
  await waitFor(
    "defaults after link down",
    () =>
      spec<{ dnsServers: string[] }>("ResolverStatuses.net.talos.dev", "resolvers")?.dnsServers.join() ===
      "1.1.1.1,8.8.8.8",
  );
  // The operator's specs go; the spec controller then removes the address from the kernel.
  await waitFor("address removed from the kernel", () => !kernel.addresses.some((a) => a.address === "10.1.0.50"));
  await waitFor(
    "address status gone",
    () => state.get("network", "AddressStatuses.net.talos.dev", "eth0/10.1.0.50/24") === undefined,
  );
  assert.deepEqual(spec("TimeServerStatuses.net.talos.dev", "timeservers"), { timeServers: ["time.cloudflare.com"] });
  await waitFor(
    "no connectivity without the DHCP route",
    () => spec<{ connectivityReady: boolean }>("NetworkStatuses.net.talos.dev", "status")?.connectivityReady === false,
  );
  assert.equal(spec<{ addressReady: boolean }>("NetworkStatuses.net.talos.dev", "status")?.addressReady, false);
});

test("default hostname follows the default node address when DHCP gives none", async (t) => {
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth1", up: true });
  await kernel.addAddress({ linkName: "eth1", address: "192.0.2.7", prefixLen: 24 });
  const state = new ResourceState();
  const runtime = new ControllerRuntime(state);
  for (const c of networkControllers({
    kernel,
    paths: pathsAt("/nonexistent"),
    linkDetails: async () => ({}),
    dhcp: false,
    writeResolvConf: false,
  }))
    runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: false }));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await waitFor(
    "hostname",
    () =>
      state.get<{ hostname: string }>("network", "HostnameStatuses.net.talos.dev", "hostname")?.spec.hostname ===
      "talos-192-0-2-7",
  );
  assert.deepEqual(state.get("network", "ResolverStatuses.net.talos.dev", "resolvers")?.spec, {
    dnsServers: ["1.1.1.1", "8.8.8.8"],
  });
});

test("kernel arguments: talos.hostname sets the cmdline layer, ignored links stay down", async (t) => {
  const kernel = new FakeNetKernel();
  kernel.addLink({ name: "eth0" });
  kernel.addLink({ name: "eth1" });
  const state = new ResourceState();
  const runtime = new ControllerRuntime(state);
  const silent = async (): Promise<DhcpTransport> => ({
    send: async () => undefined,
    onReceive: () => undefined,
    close: () => undefined,
  });
  for (const c of networkControllers({
    kernel,
    paths: pathsAt("/nonexistent"),
    linkDetails: async () => ({}),
    writeResolvConf: false,
    cmdline: "console=ttyS0 talos.hostname=box.example.org talos.network.interface.ignore=eth1",
    dhcpOptions: { transport: silent },
  }))
    runtime.register(c);
  runtime.register(new DevicesStatusController({ udevd: false }));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await waitFor(
    "cmdline hostname",
    () =>
      state.get<{ hostname: string }>("network", "HostnameStatuses.net.talos.dev", "hostname")?.spec.hostname === "box",
  );
  assert.deepEqual(state.get("network", "HostnameStatuses.net.talos.dev", "hostname")?.spec, {
    hostname: "box",
    domainname: "example.org",
  });
  await waitFor("eth0 up", () => kernel.calls.includes("setLinkUp eth0 true"));
  await runtime.whenIdle();
  assert.equal(kernel.calls.includes("setLinkUp eth1 true"), false);
});
