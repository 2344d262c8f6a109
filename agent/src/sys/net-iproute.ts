// NetKernel over iproute2: `ip -j` for reads, plain `ip` for writes and `ip monitor`
// for change notifications. Chosen over a native rtnetlink addon for now (no native
// build in the image, iproute2 is there already); every call is one short process,
// which is fine at network-event rates. Names iproute2 prints are mapped back to the
// kernel numbers the NetKernel interface speaks.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { describeError, SystemError } from "../errors.js";
import { logger } from "../log.js";
import {
  type AddressRequest,
  IFF_RUNNING,
  IFF_UP,
  type IpFamily,
  type KernelAddress,
  type KernelLink,
  type KernelRoute,
  type NetChange,
  type NetKernel,
  OPER_UNKNOWN,
  OPER_UP,
  type RouteRequest,
  IFA_F_PERMANENT,
  RTN_UNICAST,
  TABLE_MAIN,
  RTPROT_BOOT,
} from "./net.js";

const log = logger("net-iproute");

export interface IprouteOptions {
  /** The `ip` binary (default: /usr/sbin/ip, /sbin/ip, /usr/bin/ip or /bin/ip, whichever exists, else PATH). */
  ipBinary?: string;
  /** Per-command timeout in ms (default 10 s). */
  timeoutMs?: number;
}

const linkTypes: Record<string, number> = {
  netrom: 0, ether: 1, eether: 2, ax25: 3, pronet: 4, chaos: 5, ieee802: 6, arcnet: 7, atalk: 8,
  dlci: 15, atm: 19, metricom: 23, ieee1394: 24, eui64: 27, infiniband: 32,
  slip: 256, cslip: 257, slip6: 258, cslip6: 259, rsrvd: 260, adapt: 264, rose: 270, x25: 271,
  hwx25: 272, can: 280, ppp: 512, cisco: 513, hdlc: 513, lapb: 516, ddcmp: 517, rawhdlc: 518,
  ipip: 768, tunnel6: 769, frad: 770, skip: 771, loopback: 772, localtlk: 773, fddi: 774, bif: 775,
  sit: 776, "ip/ddp": 777, gre: 778, pimreg: 779, hippi: 780, ash: 781, econet: 782, irda: 783,
  fcpp: 784, fcal: 785, fcpl: 786, fcfb_0: 787, tr: 800, "ieee802.11": 801,
  "ieee802.11/prism": 802, "ieee802.11/radiotap": 803, "ieee802.15.4": 804, phonet: 820,
  phonet_pipe: 821, caif: 822, ip6gre: 823, netlink: 824, "6lowpan": 825, none: 65534, void: 65535,
};

const linkFlags: Record<string, number> = {
  UP: 0x1, BROADCAST: 0x2, DEBUG: 0x4, LOOPBACK: 0x8, POINTOPOINT: 0x10, NOTRAILERS: 0x20,
  RUNNING: 0x40, NOARP: 0x80, PROMISC: 0x100, ALLMULTI: 0x200, MASTER: 0x400, SLAVE: 0x800,
  MULTICAST: 0x1000, PORTSEL: 0x2000, AUTOMEDIA: 0x4000, DYNAMIC: 0x8000, LOWER_UP: 0x10000,
  DORMANT: 0x20000, ECHO: 0x40000,
};

const operStates: Record<string, number> = {
  UNKNOWN: 0, NOTPRESENT: 1, DOWN: 2, LOWERLAYERDOWN: 3, TESTING: 4, DORMANT: 5, UP: 6,
};

const scopes: Record<string, number> = { global: 0, universe: 0, site: 200, link: 253, host: 254, nowhere: 255 };

const routeTypes: Record<string, number> = {
  unspec: 0, unicast: 1, local: 2, broadcast: 3, anycast: 4, multicast: 5, blackhole: 6,
  unreachable: 7, prohibit: 8, throw: 9, nat: 10, xresolve: 11,
};

const protocols: Record<string, number> = {
  unspec: 0, redirect: 1, kernel: 2, boot: 3, static: 4, ra: 9, mrt: 10, zebra: 11, bird: 12,
  dnrouted: 13, xorp: 14, ntk: 15, dhcp: 16, mrtd: 17, keepalived: 18, babel: 42, openr: 99,
  bgp: 186, isis: 187, ospf: 188, rip: 189, eigrp: 192,
};

const tables: Record<string, number> = { unspec: 0, default: 253, main: 254, local: 255 };

// RTNH_F_* as iproute2 names them in the route "flags" array.
const routeFlags: Record<string, number> = {
  dead: 1, pervasive: 2, onlink: 4, offload: 8, linkdown: 16, unresolved: 32, trap: 64,
};

// IFA_F_* keyed by the boolean members `ip -j addr` prints.
const addressFlags: Record<string, number> = {
  secondary: 0x1, temporary: 0x1, nodad: 0x2, optimistic: 0x4, dadfailed: 0x8, home: 0x10,
  deprecated: 0x20, tentative: 0x40, mngtmpaddr: 0x100, noprefixroute: 0x200, autojoin: 0x400,
  "stable-privacy": 0x800,
};

/** A name iproute2 printed, or a number it printed because it had no name. */
function lookup(table: Record<string, number>, value: unknown, fallback: number): number {
  if (value === undefined || value === null || value === "") return fallback;
  if (typeof value === "number") return value;
  const s = String(value);
  const known = table[s] ?? table[s.toLowerCase()];
  if (known !== undefined) return known;
  const n = Number(s.replace(/^\[|\]$/g, "").replace(/^0x/, ""));
  return Number.isFinite(n) ? n : fallback;
}

type Json = Record<string, unknown>;

export function parseLinks(rows: Json[]): KernelLink[] {
  const byName = new Map<string, number>();
  for (const r of rows) byName.set(String(r.ifname), Number(r.ifindex));
  return rows.map((r) => {
    let flags = 0;
    for (const f of (r.flags as string[] | undefined) ?? []) flags |= linkFlags[f] ?? 0;
    const operState = lookup(operStates, r.operstate, OPER_UNKNOWN);
    // iproute2 hides IFF_RUNNING; the kernel sets it when the link is up and operationally up/unknown.
    if ((flags & IFF_UP) !== 0 && (operState === OPER_UP || operState === OPER_UNKNOWN)) flags |= IFF_RUNNING;
    const info = (r.linkinfo as Json | undefined) ?? {};
    const hw = typeof r.address === "string" ? r.address : "";
    return {
      index: Number(r.ifindex),
      name: String(r.ifname),
      type: lookup(linkTypes, r.link_type, 65534),
      flags,
      mtu: Number(r.mtu ?? 0),
      hardwareAddr: hw,
      broadcastAddr: typeof r.broadcast === "string" ? r.broadcast : "",
      permanentAddr: typeof r.permaddr === "string" ? r.permaddr : hw,
      operState,
      kind: typeof info.info_kind === "string" ? info.info_kind : "",
      slaveKind: typeof info.info_slave_kind === "string" ? info.info_slave_kind : "",
      masterIndex: typeof r.master === "string" ? (byName.get(r.master) ?? 0) : 0,
      linkIndex: typeof r.link_index === "number" ? r.link_index : typeof r.link === "string" ? (byName.get(r.link) ?? 0) : 0,
      queueDisc: typeof r.qdisc === "string" ? r.qdisc : "",
      carrier: (flags & linkFlags.LOWER_UP!) !== 0,
    };
  });
}

export function parseAddresses(rows: Json[]): KernelAddress[] {
  const out: KernelAddress[] = [];
  for (const link of rows) {
    for (const a of (link.addr_info as Json[] | undefined) ?? []) {
      const family: IpFamily = a.family === "inet6" ? 6 : 4;
      if (a.family !== "inet" && a.family !== "inet6") continue;
      let flags = a.dynamic === true ? 0 : IFA_F_PERMANENT;
      for (const [name, bit] of Object.entries(addressFlags)) if (a[name] === true) flags |= bit;
      const local = String(a.local ?? "");
      out.push({
        linkIndex: Number(link.ifindex),
        linkName: String(link.ifname),
        family,
        address: typeof a.address === "string" ? a.address : local,
        prefixLen: Number(a.prefixlen),
        local: family === 4 ? local : "",
        broadcast: typeof a.broadcast === "string" ? a.broadcast : "",
        scope: lookup(scopes, a.scope, 0),
        flags,
      });
    }
  }
  return out;
}

export function parseRoutes(rows: Json[], links: Map<string, number>): KernelRoute[] {
  return rows.map((r) => {
    const dstRaw = String(r.dst ?? "default");
    const family: IpFamily = r.family === "inet6" || dstRaw.includes(":") || String(r.gateway ?? "").includes(":") ? 6 : 4;
    let dst = "";
    let dstLen = 0;
    if (dstRaw !== "default") {
      const [a, l] = dstRaw.split("/");
      dst = a!;
      dstLen = l !== undefined ? Number(l) : family === 4 ? 32 : 128;
    }
    let flags = 0;
    for (const f of (r.flags as string[] | undefined) ?? []) flags |= routeFlags[f] ?? 0;
    let mtu = 0;
    for (const m of (r.metrics as Json[] | undefined) ?? []) if (typeof m.mtu === "number") mtu = m.mtu;
    const dev = typeof r.dev === "string" ? r.dev : "";
    return {
      family,
      table: lookup(tables, r.table, TABLE_MAIN),
      dst,
      dstLen,
      src: typeof r.prefsrc === "string" ? r.prefsrc : "",
      gateway: typeof r.gateway === "string" ? r.gateway : "",
      outLinkIndex: links.get(dev) ?? 0,
      outLinkName: dev,
      priority: Number(r.metric ?? 0),
      scope: lookup(scopes, r.scope, 0),
      type: lookup(routeTypes, r.type, RTN_UNICAST),
      // iproute2 leaves out "proto boot".
      protocol: lookup(protocols, r.protocol, RTPROT_BOOT),
      flags,
      mtu,
    };
  });
}

export class IprouteNetKernel implements NetKernel {
  private readonly ip: string;
  private readonly timeoutMs: number;

  constructor(opts: IprouteOptions = {}) {
    this.ip = opts.ipBinary ?? findIp();
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  async listLinks(): Promise<KernelLink[]> {
    return parseLinks(await this.json(["-d", "link", "show"]));
  }

  async listAddresses(): Promise<KernelAddress[]> {
    return parseAddresses(await this.json(["addr", "show"]));
  }

  async listRoutes(): Promise<KernelRoute[]> {
    const links = new Map((await this.listLinks()).map((l) => [l.name, l.index] as const));
    const v4 = await this.json(["-4", "route", "show", "table", "all"]);
    const v6 = await this.json(["-6", "route", "show", "table", "all"]);
    for (const r of v4) r.family = "inet";
    for (const r of v6) r.family = "inet6";
    return parseRoutes([...v4, ...v6], links);
  }

  async setLinkUp(name: string, up: boolean): Promise<void> {
    await this.run(["link", "set", "dev", name, up ? "up" : "down"]);
  }

  async setLinkMtu(name: string, mtu: number): Promise<void> {
    await this.run(["link", "set", "dev", name, "mtu", String(mtu)]);
  }

  async addAddress(req: AddressRequest): Promise<void> {
    await this.run(["addr", "replace", ...addressArgs(req)]);
  }

  async removeAddress(req: AddressRequest): Promise<void> {
    await this.run(["addr", "del", `${req.address}/${req.prefixLen}`, "dev", req.linkName], /Cannot assign requested address|Address not found/);
  }

  // `ip route replace` swaps out the first route with the same destination and metric,
  // whatever its link: with DHCP on two links that would clobber the other link's
  // default route. So: leave an identical route alone, re-create one that differs
  // only in attributes, and append a new one next to other links' routes.
  async addRoute(req: RouteRequest): Promise<void> {
    const table = req.table ?? TABLE_MAIN;
    const rows = await this.json([`-${req.family}`, "route", "show", "table", String(table)]);
    for (const r of rows) r.family = req.family === 6 ? "inet6" : "inet";
    const links = new Map((await this.listLinks()).map((l) => [l.name, l.index] as const));
    const same = parseRoutes(rows, links).find(
      (r) =>
        r.dst === (req.dstLen === 0 ? "" : req.dst) &&
        r.dstLen === req.dstLen &&
        r.priority === (req.priority ?? (req.family === 6 ? 1024 : 0)) &&
        r.gateway === (req.gateway ?? "") &&
        (req.outLinkName === undefined || r.outLinkName === req.outLinkName),
    );
    if (same) {
      const unchanged =
        (req.src === undefined || same.src === req.src) &&
        (req.mtu === undefined || same.mtu === req.mtu) &&
        (req.scope === undefined || same.scope === req.scope) &&
        (req.protocol === undefined || same.protocol === req.protocol);
      if (unchanged) return;
      await this.run([`-${req.family}`, "route", "del", ...routeArgs(req)], /No such process/);
    }
    await this.run([`-${req.family}`, "route", "append", ...routeArgs(req)], /File exists/);
  }

  async removeRoute(req: RouteRequest): Promise<void> {
    await this.run([`-${req.family}`, "route", "del", ...routeArgs(req)], /No such process|Cannot find device/);
  }

  /** One `ip monitor` process serves every watcher; it stops with the last one. */
  watch(signal: AbortSignal, onChange: (changes: Set<NetChange>) => void): void {
    if (signal.aborted) return;
    this.watchers.add(onChange);
    signal.addEventListener(
      "abort",
      () => {
        this.watchers.delete(onChange);
        if (this.watchers.size === 0) this.stopMonitor();
      },
      { once: true },
    );
    if (!this.monitor) this.startMonitor();
  }

  private readonly watchers = new Set<(changes: Set<NetChange>) => void>();
  private monitor: ChildProcess | undefined;
  private pending = new Set<NetChange>();
  private flushTimer: NodeJS.Timeout | undefined;

  private noteChange(...changes: NetChange[]): void {
    for (const c of changes) this.pending.add(c);
    // Coalesce bursts (one address add yields several route events).
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      const batch = this.pending;
      this.pending = new Set();
      for (const w of [...this.watchers]) w(batch);
    }, 30);
  }

  private startMonitor(): void {
    const child = spawn(this.ip, ["-o", "monitor", "label", "link", "address", "route"], { stdio: ["ignore", "pipe", "ignore"] });
    this.monitor = child;
    let buf = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.startsWith("[LINK]")) this.noteChange("link");
        else if (line.startsWith("[ADDR]")) this.noteChange("address");
        else if (line.startsWith("[ROUTE]")) this.noteChange("route");
        else if (line.trim() !== "") this.noteChange("link", "address", "route");
      }
    });
    child.on("error", (err) => log.warn("ip monitor failed", { error: describeError(err) }));
    // Changes between a watcher's first listing and the monitor being ready would be
    // lost: report one round of "everything" once it has had time to start.
    setTimeout(() => {
      if (this.monitor === child) this.noteChange("link", "address", "route");
    }, 300).unref();
    child.on("exit", () => {
      if (this.monitor !== child) return; // stopped on purpose
      this.monitor = undefined;
      if (this.watchers.size === 0) return;
      log.warn("ip monitor exited, restarting");
      setTimeout(() => {
        if (this.watchers.size === 0 || this.monitor) return;
        this.startMonitor();
        // Changes may have been missed meanwhile.
        this.noteChange("link", "address", "route");
      }, 1000).unref();
    });
  }

  private stopMonitor(): void {
    const child = this.monitor;
    this.monitor = undefined;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.pending = new Set();
    child?.kill();
  }

  private async json(args: string[]): Promise<Json[]> {
    const out = await this.run(["-j", ...args]);
    const text = out.trim();
    if (text === "") return [];
    return JSON.parse(text) as Json[];
  }

  private run(args: string[], ignoreError?: RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(this.ip, args, { timeout: this.timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err) {
          const detail = String(stderr).trim() || err.message;
          if (ignoreError?.test(detail)) return resolve("");
          return reject(new SystemError(`ip ${args.join(" ")}: ${detail}`, { command: "ip", args }));
        }
        resolve(String(stdout));
      });
    });
  }
}

/** machined may start with a PATH that lacks the sbin directories. */
function findIp(): string {
  for (const p of ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]) if (existsSync(p)) return p;
  return "ip";
}

function addressArgs(req: AddressRequest): string[] {
  const args = [`${req.address}/${req.prefixLen}`, "dev", req.linkName];
  if (req.broadcast !== undefined) args.push("broadcast", req.broadcast);
  if (req.scope !== undefined) args.push("scope", String(req.scope));
  if (req.validLifetime !== undefined) args.push("valid_lft", String(req.validLifetime));
  if (req.preferredLifetime !== undefined) args.push("preferred_lft", String(req.preferredLifetime));
  return args;
}

function routeArgs(req: RouteRequest): string[] {
  const args: string[] = [];
  if (req.type !== undefined) args.push(String(Object.entries(routeTypes).find(([, v]) => v === req.type)?.[0] ?? req.type));
  args.push(req.dstLen === 0 && (req.dst === "" || req.dst === "0.0.0.0" || req.dst === "::") ? "default" : `${req.dst}/${req.dstLen}`);
  if (req.gateway) args.push("via", req.gateway);
  if (req.outLinkName) args.push("dev", req.outLinkName);
  if (req.src) args.push("src", req.src);
  if (req.table !== undefined) args.push("table", String(req.table));
  if (req.priority !== undefined) args.push("metric", String(req.priority));
  if (req.scope !== undefined) args.push("scope", String(req.scope));
  if (req.protocol !== undefined) args.push("proto", String(req.protocol));
  if (req.mtu !== undefined && req.mtu > 0) args.push("mtu", String(req.mtu));
  return args;
}
