// The rtnetlink NetKernel against the real kernel, in a network namespace of its own:
// what it writes is what iproute2 then reads back, and what it reads is what iproute2
// wrote. This file is also the entry run inside the namespace (BASALT_NL_STEP=<step>),
// one step per process, printing the adapter's view as JSON.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { NetlinkNetKernel } from "../../agent/src/sys/net-netlink.js";
import type { NetChange } from "../../agent/src/sys/net.js";
import { canRunNetns, ip } from "./helpers/netns.js";

// The child steps run as other processes: they take the names from the parent.
const tag = process.env.BASALT_NL_TAG ?? process.pid.toString(36);
const NS = `bsl-nl-${tag}`;
const VETH = `nlv${tag}`;
const PEER = `nlp${tag}`;
const BRIDGE = `nlbr${tag}`;
// The gratuitous ARP check: a second namespace (the neighbour) across its own veth pair.
const NEIGHBOUR_NS = `bsl-nlg-${tag}`;
const GARP = `nlga${tag}`;
const GARP_PEER = `nlgb${tag}`;

if (process.env.BASALT_NL_STEP) {
  process.stdout.write(JSON.stringify(await runStep(process.env.BASALT_NL_STEP)) + "\n");
} else {
  defineTests();
}

async function runStep(step: string): Promise<unknown> {
  const k = new NetlinkNetKernel();
  try {
    switch (step) {
      case "configure": {
        await k.setLinkUp(VETH, true);
        await k.setLinkMtu(VETH, 1400);
        await k.addAddress({ linkName: VETH, address: "10.77.0.2", prefixLen: 24, broadcast: "+" });
        await k.addAddress({
          linkName: VETH,
          address: "10.77.1.2",
          prefixLen: 24,
          validLifetime: 3600,
          preferredLifetime: 1800,
        });
        await k.addAddress({ linkName: VETH, address: "fd77::2", prefixLen: 64, flags: 0x2 /* IFA_F_NODAD */ });
        await k.addRoute({
          family: 4,
          dst: "",
          dstLen: 0,
          gateway: "10.77.0.1",
          outLinkName: VETH,
          priority: 1024,
          protocol: 4,
          src: "10.77.0.2",
        });
        await k.addRoute({
          family: 4,
          dst: "192.0.2.0",
          dstLen: 24,
          gateway: "10.77.0.1",
          outLinkName: VETH,
          table: 180,
          priority: 50,
          mtu: 1300,
        });
        await k.addRoute({ family: 6, dst: "fd78::", dstLen: 48, gateway: "fd77::1", outLinkName: VETH, priority: 10 });
        // Adding the same route again is not an error and changes nothing.
        await k.addRoute({
          family: 4,
          dst: "",
          dstLen: 0,
          gateway: "10.77.0.1",
          outLinkName: VETH,
          priority: 1024,
          protocol: 4,
          src: "10.77.0.2",
        });
        await k.createLink({ kind: "bridge", name: BRIDGE, bridge: { stp: true } });
        await k.setLinkMaster(PEER, BRIDGE);
        return { links: await k.listLinks(), addresses: await k.listAddresses(), routes: await k.listRoutes() };
      }
      case "change": {
        // A bridge's settings change in place (the same path as a bond's, whose driver this kernel lacks).
        const before = (await k.listLinks()).find((l) => l.name === BRIDGE)!;
        await k.setLinkSettings({ kind: "bridge", name: BRIDGE, bridge: { stp: false } });
        const after = (await k.listLinks()).find((l) => l.name === BRIDGE)!;
        return { before: [before.index, before.bridge], after: [after.index, after.bridge] };
      }
      case "watch": {
        // Reports the kinds of change the kernel announces for an address added by iproute2.
        const seen = new Set<NetChange>();
        const ac = new AbortController();
        const done = new Promise<void>((resolve) =>
          k.watch(ac.signal, (c) => {
            for (const x of c) seen.add(x);
            if (seen.has("address") && seen.has("route")) resolve();
          }),
        );
        execFileSync("ip", ["addr", "add", "10.77.2.2/24", "dev", VETH]);
        await done;
        ac.abort();
        return [...seen].sort();
      }
      case "remove": {
        await k.removeAddress({ linkName: VETH, address: "10.77.1.2", prefixLen: 24 });
        await k.removeAddress({ linkName: VETH, address: "10.77.1.2", prefixLen: 24 }); // absent: no error
        await k.removeRoute({
          family: 4,
          dst: "192.0.2.0",
          dstLen: 24,
          gateway: "10.77.0.1",
          outLinkName: VETH,
          table: 180,
          priority: 50,
        });
        await k.removeRoute({
          family: 4,
          dst: "192.0.2.0",
          dstLen: 24,
          gateway: "10.77.0.1",
          outLinkName: VETH,
          table: 180,
          priority: 50,
        });
        await k.setLinkMaster(PEER, undefined);
        await k.deleteLink(BRIDGE);
        await k.deleteLink(BRIDGE); // absent: no error
        return { links: (await k.listLinks()).map((l) => l.name).sort() };
      }
      case "announce": {
        await k.addAddress({ linkName: GARP, address: "10.78.0.100", prefixLen: 32 });
        await k.announceAddress(GARP, "10.78.0.100");
        // IPv6 has no ARP: nothing is sent, as in Talos.
        await k.announceAddress(GARP, "fd78::100");
        return {};
      }
      default:
        throw new Error(`unknown step ${step}`);
    }
  } finally {
    k.close();
  }
}

function step(name: string): unknown {
  const out = execFileSync("ip", ["netns", "exec", NS, process.execPath, fileURLToPath(import.meta.url)], {
    env: { ...process.env, BASALT_NL_STEP: name, BASALT_NL_TAG: tag, BASALT_LOG_LEVEL: "warn" },
    encoding: "utf8",
  });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

interface IpAddr {
  ifname: string;
  mtu: number;
  master?: string;
  addr_info: {
    family: string;
    local: string;
    prefixlen: number;
    broadcast?: string;
    valid_life_time: number;
    preferred_life_time: number;
    nodad?: boolean;
  }[];
}

function defineTests(): void {
  const skip = canRunNetns();
  test("gratuitous ARP for an address lands in the neighbour namespace's ARP table with our MAC", {
    skip: skip ?? false,
    timeout: 60_000,
  }, (t) => {
    t.after(() => {
      for (const n of [NS, NEIGHBOUR_NS]) {
        try {
          ip("netns", "del", n);
        } catch {
          // already gone
        }
      }
    });
    ip("netns", "add", NS);
    ip("netns", "add", NEIGHBOUR_NS);
    ip("-n", NS, "link", "add", GARP, "type", "veth", "peer", "name", GARP_PEER, "netns", NEIGHBOUR_NS);
    ip("-n", NS, "addr", "add", "10.78.0.2/24", "dev", GARP);
    ip("-n", NEIGHBOUR_NS, "addr", "add", "10.78.0.1/24", "dev", GARP_PEER);
    ip("-n", NS, "link", "set", GARP, "up");
    ip("-n", NEIGHBOUR_NS, "link", "set", GARP_PEER, "up");
    // A neighbour takes entries from gratuitous ARP only with arp_accept (the default ignores unsolicited ones).
    execFileSync("ip", [
      "netns",
      "exec",
      NEIGHBOUR_NS,
      "sh",
      "-c",
      `echo 1 > /proc/sys/net/ipv4/conf/${GARP_PEER}/arp_accept`,
    ]);
    const mac = (JSON.parse(ip("-n", NS, "-j", "link", "show", "dev", GARP)) as { address: string }[])[0]!.address;
    assert.equal(ip("-n", NEIGHBOUR_NS, "neigh", "show", "10.78.0.100").trim(), "", "no entry before the announcement");

    step("announce");
    const entries = JSON.parse(ip("-n", NEIGHBOUR_NS, "-j", "neigh", "show", "10.78.0.100")) as {
      dst: string;
      dev: string;
      lladdr: string;
    }[];
    assert.deepEqual(
      entries.map((e) => [e.dst, e.dev, e.lladdr]),
      [["10.78.0.100", GARP_PEER, mac]],
    );
  });

  test("rtnetlink adapter: links, addresses, routes and notifications in a namespace", {
    skip: skip ?? false,
    timeout: 60_000,
  }, (t) => {
    t.after(() => {
      try {
        ip("netns", "del", NS);
      } catch {
        // already gone
      }
    });
    ip("netns", "add", NS);
    ip("-n", NS, "link", "add", VETH, "type", "veth", "peer", "name", PEER);

    const seen = step("configure") as {
      links: { name: string; mtu: number; kind: string; masterIndex: number; index: number; flags: number }[];
      addresses: {
        linkName: string;
        address: string;
        prefixLen: number;
        broadcast: string;
        family: number;
        flags: number;
      }[];
      routes: {
        table: number;
        dst: string;
        dstLen: number;
        gateway: string;
        priority: number;
        protocol: number;
        src: string;
        mtu: number;
        outLinkName: string;
        family: number;
      }[];
    };

    // What the kernel holds, read by iproute2.
    const links = JSON.parse(ip("-n", NS, "-j", "addr", "show")) as IpAddr[];
    const veth = links.find((l) => l.ifname === VETH)!;
    assert.equal(veth.mtu, 1400);
    const v4 = veth.addr_info
      .filter((a) => a.family === "inet")
      .map((a) => `${a.local}/${a.prefixlen} brd=${a.broadcast ?? ""} valid=${a.valid_life_time}`);
    assert.deepEqual(v4.sort(), ["10.77.0.2/24 brd=10.77.0.255 valid=4294967295", "10.77.1.2/24 brd= valid=3600"]);
    const v6 = veth.addr_info.find((a) => a.family === "inet6" && a.local === "fd77::2")!;
    assert.equal(v6.prefixlen, 64);
    assert.equal(v6.nodad, true);
    assert.equal(links.find((l) => l.ifname === PEER)!.master, BRIDGE);
    const dflt = JSON.parse(ip("-n", NS, "-j", "-4", "route", "show", "default")) as {
      gateway: string;
      metric: number;
      protocol: string;
      prefsrc: string;
      dev: string;
    }[];
    assert.deepEqual(
      dflt.map((r) => [r.gateway, r.metric, r.protocol, r.prefsrc, r.dev]),
      [["10.77.0.1", 1024, "static", "10.77.0.2", VETH]],
    );
    const t180 = JSON.parse(ip("-n", NS, "-j", "-4", "route", "show", "table", "180")) as {
      dst: string;
      gateway: string;
      metric: number;
      metrics?: { mtu: number }[];
    }[];
    assert.deepEqual(
      t180.map((r) => [r.dst, r.gateway, r.metric, r.metrics?.[0]?.mtu]),
      [["192.0.2.0/24", "10.77.0.1", 50, 1300]],
    );
    const v6r = JSON.parse(ip("-n", NS, "-j", "-6", "route", "show", "fd78::/48")) as {
      gateway: string;
      metric: number;
    }[];
    assert.deepEqual(
      v6r.map((r) => [r.gateway, r.metric]),
      [["fd77::1", 10]],
    );

    // What the adapter read back matches.
    const byName = new Map(seen.links.map((l) => [l.name, l]));
    assert.equal(byName.get(VETH)!.mtu, 1400);
    assert.equal(byName.get(BRIDGE)!.kind, "bridge");
    assert.equal(byName.get(PEER)!.masterIndex, byName.get(BRIDGE)!.index);
    assert.deepEqual(
      seen.addresses
        .filter((a) => a.linkName === VETH && !a.address.startsWith("fe80"))
        .map((a) => `${a.address}/${a.prefixLen} ${a.broadcast}`)
        .sort(),
      ["10.77.0.2/24 10.77.0.255", "10.77.1.2/24 ", "fd77::2/64 "],
    );
    const routeKeys = seen.routes
      .filter((r) => r.gateway !== "")
      .map(
        (r) =>
          `${r.family} t${r.table} ${r.dst}/${r.dstLen} via ${r.gateway} m${r.priority} p${r.protocol} src=${r.src} mtu=${r.mtu} ${r.outLinkName}`,
      )
      .sort();
    assert.deepEqual(routeKeys, [
      `4 t180 192.0.2.0/24 via 10.77.0.1 m50 p3 src= mtu=1300 ${VETH}`,
      `4 t254 /0 via 10.77.0.1 m1024 p4 src=10.77.0.2 mtu=0 ${VETH}`,
      `6 t254 fd78::/48 via fd77::1 m10 p3 src= mtu=0 ${VETH}`,
    ]);

    const bridgeIndex = byName.get(BRIDGE)!.index;
    assert.deepEqual(step("change"), {
      before: [bridgeIndex, { stp: true, vlanFiltering: false }],
      after: [bridgeIndex, { stp: false, vlanFiltering: false }],
    });
    const bridge = (
      JSON.parse(ip("-n", NS, "-d", "-j", "link", "show", "dev", BRIDGE)) as {
        ifindex: number;
        linkinfo: { info_data: { stp_state: number } };
      }[]
    )[0]!;
    assert.deepEqual([bridge.ifindex, bridge.linkinfo.info_data.stp_state], [bridgeIndex, 0]);

    assert.deepEqual(step("watch"), ["address", "route"]);

    assert.deepEqual(step("remove"), { links: ["lo", PEER, VETH].sort() });
    const after = (JSON.parse(ip("-n", NS, "-j", "addr", "show", "dev", VETH)) as IpAddr[])[0]!;
    assert.deepEqual(
      after.addr_info
        .filter((a) => a.family === "inet")
        .map((a) => a.local)
        .sort(),
      ["10.77.0.2", "10.77.2.2"],
    );
    assert.equal(ip("-n", NS, "-4", "route", "show", "table", "180").trim(), "");
    assert.equal(
      (JSON.parse(ip("-n", NS, "-j", "link", "show", "dev", PEER)) as { master?: string }[])[0]!.master,
      undefined,
    );
  });
}
