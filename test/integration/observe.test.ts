// The observation RPCs and the kernel/hardware resources through the real sandbox
// (machined + apid, mutual TLS), each compared with what /proc says at that moment:
// exact where the value holds still (names, counts, ids), and for counters read
// between two reads of the same file by this test (retried until one such bracket holds).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import dgram from "node:dgram";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { parseAllDocuments } from "yaml";
import { NodeClient } from "../../agent/src/client/client.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-observe-"));
const tree = mkdtempSync(path.join(os.tmpdir(), "basalt-observe-tree-"));
let sandbox: SandboxProcess;
let controlplane = "";
const clients: NodeClient[] = [];
let admin: NodeClient;

type Rec = Record<string, unknown>;
const code = (expected: grpc.status, details?: RegExp) => (err: grpc.ServiceError) =>
  err.code === expected && (!details || details.test(err.details));

before(async () => {
  ({
    sandbox,
    config: controlplane,
    admin,
  } = await startConfiguredSandbox({ clusterName: "observe", stateDir, args: ["--apid-in-process"] }));
  clients.push(admin);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(tree, { recursive: true, force: true });
});

async function one<T = Rec>(method: string, request: object = {}): Promise<T> {
  const reply = await admin.unary<{ messages: T[] }>(admin.machine, method, request);
  assert.equal(reply.messages.length, 1);
  return reply.messages[0]!;
}

const between = (v: number, a: number, b: number) => v >= Math.min(a, b) && v <= Math.max(a, b);

/**
 * Reads `file`, calls the RPC, reads `file` again; `check` asserts exact facts and returns the
 * counters that must lie between the two reads. Retried (a bounded number of times) until they do.
 */
async function bracketed<T>(
  file: string,
  call: () => Promise<T>,
  check: (got: T, before: string, after: string) => [got: number, before: number, after: number, what: string][],
) {
  let last = "";
  for (let attempt = 0; attempt < 20; attempt++) {
    const beforeText = readFileSync(file, "utf8");
    const got = await call();
    const afterText = readFileSync(file, "utf8");
    const outside = check(got, beforeText, afterText).filter(([g, b, a]) => !between(g, b, a));
    if (outside.length === 0) return;
    last = outside.map(([g, b, a, what]) => `${what}: ${g} not within ${b}..${a}`).join("; ");
  }
  assert.fail(`never within one bracket: ${last}`);
}

/** "Key: value" lines of a /proc file, keys as the proto names them (lower-case, no "(", ")" or "_"). */
function procKeyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^([^:\n]+):\s+(\d+)/gm))
    out.set(m[1]!.toLowerCase().replace(/[()_]/g, ""), Number(m[2]));
  return out;
}

test("Memory: every /proc/meminfo line in the MemInfo field of its name (kB); fields the kernel lacks are 0", async () => {
  await bracketed(
    "/proc/meminfo",
    () => one<{ meminfo: Record<string, number> }>("Memory"),
    (got, before, after) => {
      const [b, a] = [procKeyValues(before), procKeyValues(after)];
      const fields = Object.keys(got.meminfo);
      assert.equal(fields.length, 48);
      const present = fields.filter((f) => b.has(f));
      assert.ok(
        present.includes("memtotal") &&
          present.includes("activeanon") &&
          present.includes("hugepagestotal") &&
          present.includes("committedas"),
      );
      for (const f of fields.filter((f) => !b.has(f))) assert.equal(got.meminfo[f], 0, f);
      assert.equal(got.meminfo["memtotal"], b.get("memtotal"));
      return present.map((f) => [got.meminfo[f]!, b.get(f)!, a.get(f)!, f]);
    },
  );
});

test("CPUInfo: one entry per processor with the same fields as /proc/cpuinfo", async () => {
  const got = (await one<{ cpu_info: Rec[] }>("CPUInfo")).cpu_info;
  const blocks = readFileSync("/proc/cpuinfo", "utf8")
    .trim()
    .split(/\n\n+/)
    .map(
      (b) => new Map(b.split("\n").map((l) => [l.slice(0, l.indexOf(":")).trim(), l.slice(l.indexOf(":") + 1).trim()])),
    );
  assert.equal(got.length, blocks.length);
  blocks.forEach((b, i) => {
    const c = got[i]!;
    assert.equal(c["processor"], Number(b.get("processor")));
    if (b.has("model name")) assert.equal(c["model_name"], b.get("model name"));
    if (b.has("vendor_id")) assert.equal(c["vendor_id"], b.get("vendor_id"));
    if (b.has("flags")) assert.deepEqual(c["flags"], b.get("flags")!.split(" "));
    if (b.has("Features")) assert.deepEqual(c["flags"], b.get("Features")!.split(" "));
    if (b.has("siblings")) assert.equal(c["siblings"], Number(b.get("siblings")));
    if (b.has("cpu cores")) assert.equal(c["cpu_cores"], Number(b.get("cpu cores")));
    if (b.has("address sizes")) assert.equal(c["address_sizes"], b.get("address sizes"));
    const bogomips = b.get("bogomips") ?? b.get("BogoMIPS");
    if (bogomips) assert.equal(c["bogo_mips"], Number(bogomips));
  });
});

test("LoadAvg, SystemStat, NetworkDeviceStats, DiskStats, Hostname: names and counts exact, counters between two reads", async () => {
  await bracketed(
    "/proc/loadavg",
    () => one<{ load1: number; load5: number; load15: number }>("LoadAvg"),
    (got, b, a) => {
      const [bf, af] = [b.split(" ").map(Number), a.split(" ").map(Number)];
      return [
        [got.load1, bf[0]!, af[0]!, "load1"],
        [got.load5, bf[1]!, af[1]!, "load5"],
        [got.load15, bf[2]!, af[2]!, "load15"],
      ];
    },
  );

  type Stat = {
    boot_time: number;
    cpu: { user: number }[];
    cpu_total: { user: number; idle: number };
    irq: number[];
    irq_total: number;
    context_switches: number;
    process_created: number;
    soft_irq_total: number;
  };
  await bracketed(
    "/proc/stat",
    () => one<Stat>("SystemStat"),
    (got, b, a) => {
      const field = (text: string, key: string) =>
        text
          .split("\n")
          .find((l) => l.startsWith(key + " "))!
          .trim()
          .split(/\s+/)
          .slice(1)
          .map(Number);
      assert.equal(got.boot_time, field(b, "btime")[0]);
      assert.equal(got.cpu.length, b.split("\n").filter((l) => /^cpu\d+ /.test(l)).length);
      assert.equal(got.irq.length, field(b, "intr").length - 1);
      return [
        [got.cpu_total.user, field(b, "cpu")[0]! / 100, field(a, "cpu")[0]! / 100, "cpu user s"],
        [got.cpu_total.idle, field(b, "cpu")[3]! / 100, field(a, "cpu")[3]! / 100, "cpu idle s"],
        [got.irq_total, field(b, "intr")[0]!, field(a, "intr")[0]!, "intr"],
        [got.context_switches, field(b, "ctxt")[0]!, field(a, "ctxt")[0]!, "ctxt"],
        [got.process_created, field(b, "processes")[0]!, field(a, "processes")[0]!, "processes"],
        [got.soft_irq_total, field(b, "softirq")[0]!, field(a, "softirq")[0]!, "softirq"],
      ];
    },
  );

  type Dev = { name: string; rx_bytes: number; tx_packets: number };
  await bracketed(
    "/proc/net/dev",
    () => one<{ devices: Dev[]; total: Dev }>("NetworkDeviceStats"),
    (got, b, a) => {
      const rows = (text: string) =>
        new Map(
          text
            .split("\n")
            .slice(2)
            .filter((l) => l.includes(":"))
            .map((l) => [
              l.slice(0, l.indexOf(":")).trim(),
              l
                .slice(l.indexOf(":") + 1)
                .trim()
                .split(/\s+/)
                .map(Number),
            ]),
        );
      const [rb, ra] = [rows(b), rows(a)];
      assert.deepEqual(
        got.devices.map((d) => d.name),
        [...rb.keys()],
      );
      assert.equal(got.total.name, [...rb.keys()].sort().join(", "));
      return got.devices.flatMap((d): [number, number, number, string][] => [
        [d.rx_bytes, rb.get(d.name)![0]!, ra.get(d.name)![0]!, `${d.name} rx_bytes`],
        [d.tx_packets, rb.get(d.name)![9]!, ra.get(d.name)![9]!, `${d.name} tx_packets`],
      ]);
    },
  );

  type Disk = { name: string; read_completed: number; write_sectors: number };
  await bracketed(
    "/proc/diskstats",
    () => one<{ devices: Disk[] }>("DiskStats"),
    (got, b, a) => {
      const rows = (text: string) =>
        new Map(
          text
            .split("\n")
            .map((l) => l.trim().split(/\s+/))
            .filter((f) => f.length >= 18)
            .map((f) => [f[2]!, f.slice(3).map(Number)]),
        );
      const [rb, ra] = [rows(b), rows(a)];
      assert.deepEqual(
        got.devices.map((d) => d.name),
        [...rb.keys()],
      );
      return got.devices.flatMap((d): [number, number, number, string][] => [
        [d.read_completed, rb.get(d.name)![0]!, ra.get(d.name)![0]!, `${d.name} reads`],
        [d.write_sectors, rb.get(d.name)![6]!, ra.get(d.name)![6]!, `${d.name} write sectors`],
      ]);
    },
  );

  assert.equal((await one<{ hostname: string }>("Hostname")).hostname, os.hostname());
});

test("Processes: the sandbox and this test as /proc describes them; every process alive before and after the call is listed", async () => {
  type P = {
    pid: number;
    ppid: number;
    command: string;
    executable: string;
    args: string;
    threads: number;
    resident_memory: number;
  };
  const withExe = () =>
    new Set(
      readdirSync("/proc")
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            readlinkSync(`/proc/${n}/exe`);
            return readFileSync(`/proc/${n}/cmdline`).length > 0;
          } catch {
            return false;
          }
        })
        .map(Number),
    );
  const beforePids = withExe();
  const got = (await one<{ processes: P[] }>("Processes")).processes;
  const afterPids = withExe();
  const listed = new Set(got.map((p) => p.pid));
  for (const pid of beforePids) if (afterPids.has(pid)) assert.ok(listed.has(pid), `pid ${pid} listed`);
  for (const pid of listed) assert.ok(beforePids.has(pid) || afterPids.has(pid), `pid ${pid} existed`);
  const me = got.find((p) => p.pid === process.pid)!;
  assert.deepEqual(
    [me.ppid, me.command, me.executable],
    [process.ppid, readFileSync("/proc/self/comm", "utf8").trim(), readlinkSync("/proc/self/exe")],
  );
  assert.equal(me.args, readFileSync("/proc/self/cmdline", "utf8").replace(/\0+$/, "").replaceAll("\0", " "));
  const sb = got.find((p) => p.pid === sandbox.child.pid)!;
  assert.equal(sb.ppid, process.pid);
  assert.equal(sb.executable, process.execPath);
  assert.match(sb.args, /sandbox\.js --state-dir /);
  const statFields = readFileSync(`/proc/${sb.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  assert.equal(sb.threads, Number(statFields[17]));
});

test("Netstat: this test's TCP and UDP sockets, v4 and v6, listening and connected, with the owning pid and name", async () => {
  const listen = (host: string) =>
    new Promise<net.Server>((resolve) => {
      const s = net.createServer((c) => c.on("error", () => undefined));
      s.listen(0, host, () => resolve(s));
    });
  const v6 = existsSync("/proc/net/tcp6") && os.networkInterfaces()["lo"]?.some((i) => i.address === "::1");
  const servers = [await listen("127.0.0.1"), ...(v6 ? [await listen("::1")] : [])];
  const udp = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
  const client = net.connect((servers[0]!.address() as net.AddressInfo).port, "127.0.0.1");
  await new Promise<void>((resolve) => client.once("connect", () => resolve()));
  try {
    type R = {
      l4proto: string;
      localip: string;
      localport: number;
      remoteip: string;
      remoteport: number;
      state: number;
      inode: number;
      uid: number;
      process: { pid: number; name: string };
    };
    const all = { tcp: true, tcp6: true, udp: true, udp6: true };
    const listening = (
      await one<{ connectrecord: R[] }>("Netstat", {
        filter: 2,
        feature: { pid: true },
        l4proto: all,
        netns: { hostnetwork: true },
      })
    ).connectrecord;
    const comm = readFileSync("/proc/self/comm", "utf8").trim();
    const inodeOf = (file: string, port: number) => {
      const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
      const row = readFileSync(file, "utf8")
        .split("\n")
        .find((l) => l.trim().split(/\s+/)[1]?.endsWith(`:${hexPort}`) && l.trim().split(/\s+/)[2]?.endsWith(":0000"));
      return Number(row!.trim().split(/\s+/)[9]);
    };
    for (const [i, s] of servers.entries()) {
      const addr = s.address() as net.AddressInfo;
      const proto = i === 0 ? "tcp" : "tcp6";
      const r = listening.find((x) => x.l4proto === proto && x.localport === addr.port)!;
      assert.deepEqual(
        [r.localip, r.remoteip, r.remoteport, r.state, r.uid, r.process, r.inode],
        [
          addr.address,
          i === 0 ? "0.0.0.0" : "::",
          0,
          10,
          process.getuid!(),
          { pid: process.pid, name: comm },
          inodeOf(`/proc/net/${proto}`, addr.port),
        ],
      );
    }
    const u = listening.find((x) => x.l4proto === "udp" && x.localport === udp.address().port)!;
    assert.deepEqual(
      [u.localip, u.state, u.process.pid, u.inode],
      ["127.0.0.1", 7, process.pid, inodeOf("/proc/net/udp", udp.address().port)],
    );
    assert.ok(
      listening.every((x) => x.remoteport === 0),
      "listening: no remote port",
    );

    const connected = (
      await one<{ connectrecord: R[] }>("Netstat", {
        filter: 1,
        feature: { pid: false },
        l4proto: { tcp: true },
        netns: { hostnetwork: true },
      })
    ).connectrecord;
    const out = connected.find((x) => x.localport === client.localPort && x.remoteport === client.remotePort)!;
    const back = connected.find((x) => x.localport === client.remotePort && x.remoteport === client.localPort)!;
    assert.deepEqual([out.state, back.state, out.process], [1, 1, { pid: 0, name: "" }]);
    assert.ok(connected.every((x) => x.l4proto === "tcp" && x.remoteport !== 0));

    // Every listening TCP socket /proc lists, no more (the set read before and after the call must agree).
    await eventually(async () => {
      const ports = () =>
        readFileSync("/proc/net/tcp", "utf8")
          .split("\n")
          .slice(1)
          .map((l) => l.trim().split(/\s+/))
          .filter((f) => f[3] === "0A")
          .map((f) => f[9])
          .sort()
          .join(",");
      const b = ports();
      const got = (
        await one<{ connectrecord: R[] }>("Netstat", {
          filter: 2,
          l4proto: { tcp: true },
          netns: { hostnetwork: true },
        })
      ).connectrecord;
      assert.equal(b, ports());
      assert.equal(
        got
          .map((x) => String(x.inode))
          .sort()
          .join(","),
        b,
      );
    }, 20);
  } finally {
    client.destroy();
    udp.close();
    for (const s of servers) s.close();
  }
});

test("DiskUsage: Talos's limits (depth, all, threshold), directory sizes with everything below them, a missing path's error", async () => {
  const root = path.join(tree, "du");
  mkdirSync(path.join(root, "a", "b"), { recursive: true });
  writeFileSync(path.join(root, "a", "f1"), Buffer.alloc(100));
  writeFileSync(path.join(root, "a", "b", "f2"), Buffer.alloc(1000));
  writeFileSync(path.join(root, "c"), Buffer.alloc(10));
  const size = (p: string) => lstatSync(path.join(root, p)).size;
  const b = size("a/b") + 1000;
  const a = size("a") + 100 + b;
  const top = size(".") + a + 10;
  type U = { name: string; relative_name: string; size: number; error: string };
  const usage = async (req: object) =>
    ((await admin.collect<U>(admin.machine, "DiskUsage", { paths: [root], ...req })) as U[]).map((u) => [
      u.relative_name,
      u.size,
    ]);
  assert.deepEqual(await usage({}), [
    ["a/b", b],
    ["a", a],
    [".", top],
  ]);
  assert.deepEqual(await usage({ all: true }), [
    ["a/b/f2", 1000],
    ["a/b", b],
    ["a/f1", 100],
    ["a", a],
    ["c", 10],
    [".", top],
  ]);
  assert.deepEqual(await usage({ recursion_depth: 2 }), [
    ["a", a],
    [".", top],
  ]);
  assert.deepEqual(await usage({ all: true, threshold: 100 }), [
    ["a/b/f2", 1000],
    ["a/b", b],
    ["a/f1", 100],
    ["a", a],
    [".", top],
  ]);
  assert.deepEqual(await usage({ all: true, threshold: -100 }), [
    ["a/f1", 100],
    ["c", 10],
  ]);
  const missing = await admin.collect<U>(admin.machine, "DiskUsage", {
    paths: [path.join(tree, "missing"), root],
    recursion_depth: 1,
  });
  assert.deepEqual(
    missing.map((u) => [u.name, u.relative_name, u.error]),
    [
      [
        path.join(tree, "missing"),
        path.join(tree, "missing"),
        `lstat ${path.join(tree, "missing")}: no such file or directory`,
      ],
      [root, ".", ""],
    ],
  );
});

test("Copy: a tar.gz that tar extracts to the same tree (long names, a symlink, an empty file); a socket is skipped and named", async () => {
  const root = path.join(tree, "copy");
  const deep = path.join(root, "d".repeat(60), "e".repeat(60));
  mkdirSync(deep, { recursive: true });
  writeFileSync(path.join(deep, "f".repeat(90)), "long name\n");
  writeFileSync(path.join(root, "big.bin"), Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251)));
  writeFileSync(path.join(root, "empty"), "");
  symlinkSync("big.bin", path.join(root, "link"));
  const sock = path.join(root, "s.sock");
  const server = net.createServer().listen(sock);
  await new Promise((r) => server.once("listening", r));
  try {
    type D = { bytes: Buffer; metadata?: { error: string } | null };
    const msgs = await admin.collect<D>(admin.machine, "Copy", { root_path: root });
    const archive = Buffer.concat(msgs.map((m) => m.bytes ?? Buffer.alloc(0)));
    assert.equal(
      msgs.at(-1)!.metadata?.error,
      `1 error occurred:\n\t* skipping ${JSON.stringify(sock)}: archive/tar: sockets not supported\n\n`,
    );
    const out = path.join(tree, "copy-out");
    mkdirSync(out);
    execFileSync("tar", ["-xzf", "-", "-C", out], { input: archive });
    const listing = execFileSync("tar", ["-tzf", "-"], { input: archive }).toString().trim().split("\n").sort();
    assert.deepEqual(listing, [
      "big.bin",
      `${"d".repeat(60)}/`,
      `${"d".repeat(60)}/${"e".repeat(60)}/`,
      `${"d".repeat(60)}/${"e".repeat(60)}/${"f".repeat(90)}`,
      "empty",
      "link",
    ]);
    assert.deepEqual(readFileSync(path.join(out, "big.bin")), readFileSync(path.join(root, "big.bin")));
    assert.equal(readFileSync(path.join(out, "d".repeat(60), "e".repeat(60), "f".repeat(90)), "utf8"), "long name\n");
    assert.equal(readFileSync(path.join(out, "empty"), "utf8"), "");
    assert.equal(readlinkSync(path.join(out, "link")), "big.bin");
    assert.equal(lstatSync(path.join(out, "big.bin")).mode & 0o777, lstatSync(path.join(root, "big.bin")).mode & 0o777);
  } finally {
    server.close();
  }
  const gone = await admin.collect<{ bytes: Buffer; metadata?: { error: string } }>(admin.machine, "Copy", {
    root_path: path.join(tree, "missing"),
  });
  assert.deepEqual(
    gone.map((m) => [m.bytes.length, m.metadata?.error]),
    [[0, `lstat ${path.join(tree, "missing")}: no such file or directory`]],
  );
  await assert.rejects(
    admin.collect(admin.machine, "Copy", { root_path: "relative/path" }),
    code(grpc.status.INVALID_ARGUMENT, /^path is not absolute/),
  );
});

test("inspect dependencies: every controller's declared inputs and outputs, each naming a registered resource type", async () => {
  type E = {
    controller_name: string;
    edge_type: number;
    resource_namespace: string;
    resource_type: string;
    resource_id: string;
  };
  const reply = await admin.unary<{ messages: { edges: E[] }[] }>(admin.inspect, "ControllerRuntimeDependencies");
  const edges = reply.messages[0]!.edges;
  const of = (name: string) =>
    edges
      .filter((e) => e.controller_name === name)
      .map((e) => [e.edge_type, e.resource_namespace, e.resource_type, e.resource_id]);
  assert.deepEqual(of("runtime.KernelParamSpecController"), [
    [1, "runtime", "KernelParamDefaultSpecs.runtime.talos.dev", ""],
    [1, "runtime", "KernelParamSpecs.runtime.talos.dev", ""],
    [0, "", "KernelParamStatuses.runtime.talos.dev", ""],
  ]);
  assert.deepEqual(of("runtime.KernelParamConfigController"), [
    [1, "config", "MachineConfigs.config.talos.dev", "v1alpha1"],
    [3, "", "KernelParamSpecs.runtime.talos.dev", ""],
  ]);
  const defs = (await admin.resourceList("meta", "ResourceDefinitions.meta.cosi.dev")) as {
    resource?: { metadata: { id: string } };
  }[];
  const registered = new Set(defs.flatMap((d) => (d.resource ? [d.resource.metadata.id] : [])));
  for (const e of edges)
    assert.ok(registered.has(e.resource_type.toLowerCase()), `${e.controller_name}: ${e.resource_type} is registered`);
  // Each output type has exactly one exclusive writer.
  const exclusive = edges.filter((e) => e.edge_type === 0).map((e) => e.resource_type);
  assert.equal(new Set(exclusive).size, exclusive.length);
});

test("DevicesStatus: ready at once in the sandbox, which runs no udevd (Talos in a container); the link controllers wait on it", async () => {
  type S = { resource?: { metadata: { id: string; namespace: string }; spec: { yaml_spec: string } } };
  const listed = ((await admin.resourceList("runtime", "DevicesStatuses.runtime.talos.dev")) as S[]).flatMap((m) =>
    m.resource ? [m.resource] : [],
  );
  assert.deepEqual(
    listed.map((r) => [r.metadata.namespace, r.metadata.id, r.spec.yaml_spec]),
    [["runtime", "devices", "ready: true\n"]],
  );
  type E = {
    controller_name: string;
    edge_type: number;
    resource_namespace: string;
    resource_type: string;
    resource_id: string;
  };
  const reply = await admin.unary<{ messages: { edges: E[] }[] }>(admin.inspect, "ControllerRuntimeDependencies");
  const of = (name: string) =>
    reply.messages[0]!.edges.filter((e) => e.controller_name === name).map((e) => [
      e.edge_type,
      e.resource_namespace,
      e.resource_type,
      e.resource_id,
    ]);
  assert.deepEqual(of("runtime.DevicesStatusController"), [[0, "", "DevicesStatuses.runtime.talos.dev", ""]]);
  assert.deepEqual(of("network.LinkStatusController"), [
    [2, "runtime", "DevicesStatuses.runtime.talos.dev", "devices"],
    [0, "", "LinkStatuses.net.talos.dev", ""],
  ]);
});

test("KernelParamStatus: Talos's container defaults, and .machine.sysctls applied live and removed live (the sandbox writes its overlay, not the host)", async () => {
  type S = { resource?: { metadata: { id: string }; spec: { yaml_spec: string } } };
  const statuses = async () =>
    new Map(
      ((await admin.resourceList("runtime", "KernelParamStatuses.runtime.talos.dev")) as S[]).flatMap((m) =>
        m.resource ? [[m.resource.metadata.id, m.resource.spec.yaml_spec] as const] : [],
      ),
    );
  const ipv6 = existsSync("/proc/sys/net/ipv6/conf/default/accept_ra");
  const initial = await statuses();
  assert.equal(initial.size, ipv6 ? 10 : 8);
  const hostPanic = readFileSync("/proc/sys/kernel/panic", "utf8").trim();
  assert.equal(initial.get("proc.sys.kernel.panic"), `current: "10"\ndefault: "${hostPanic}"\nunsupported: false\n`);
  assert.equal(readFileSync(path.join(stateDir, "kernel-params/proc/sys/kernel/panic"), "utf8"), "10");

  const withSysctls = (sysctls: Record<string, string> | undefined) => {
    const docs = parseAllDocuments(controlplane);
    if (sysctls) docs[0]!.setIn(["machine", "sysctls"], sysctls);
    return docs.map((d) => d.toString()).join("---\n");
  };
  const hostSwappiness = readFileSync("/proc/sys/vm/swappiness", "utf8").trim();
  const applied = (await admin.applyConfiguration(withSysctls({ "vm.swappiness": "7" }), { mode: 1 })) as {
    messages: { mode: number }[];
  };
  assert.equal(applied.messages[0]!.mode, 2, "applied without a reboot");
  await eventually(async () =>
    assert.equal(
      (await statuses()).get("proc.sys.vm.swappiness"),
      `current: "7"\ndefault: "${hostSwappiness}"\nunsupported: false\n`,
    ),
  );
  assert.equal(readFileSync(path.join(stateDir, "kernel-params/proc/sys/vm/swappiness"), "utf8"), "7");
  assert.equal(
    readFileSync("/proc/sys/vm/swappiness", "utf8").trim(),
    hostSwappiness,
    "the host's kernel is untouched",
  );

  await admin.applyConfiguration(withSysctls(undefined), { mode: 1 });
  await eventually(async () => assert.equal((await statuses()).has("proc.sys.vm.swappiness"), false));
  assert.equal(
    readFileSync(path.join(stateDir, "kernel-params/proc/sys/vm/swappiness"), "utf8").trim(),
    hostSwappiness,
    "the value found before is back",
  );
});
