// The supervisor through apid against the sandbox: Talos's service states and events,
// a process that dies is restarted per its policy, ServiceStop/Start/Restart, the
// ServiceStateEvents on Events in order, and service logs (tail, follow, unknown ids).
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import dgram from "node:dgram";
import net from "node:net";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { decode } from "../../agent/src/api/index.js";
import { NodeClient, type ClientCredentials } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox, type SandboxProcess } from "./helpers/sandbox.js";

let stateDir = "";
let trustdPort = 0;
let sandbox: SandboxProcess | undefined;
let c: NodeClient;
let insecure: NodeClient;
// machine.logging.destinations: a UDP and a TCP receiver here.
const udpRecords: Record<string, unknown>[] = [];
const tcpRecords: Record<string, unknown>[] = [];
let udpServer: dgram.Socket;
let tcpServer: net.Server;

type ServiceInfo = {
  id: string;
  state: string;
  events: { events: { msg: string; state: string }[] };
  health: { healthy: boolean; unknown: boolean };
};
type EventMsg = { data: { type_url: string; value: Buffer }; id: string };

async function services(): Promise<Map<string, ServiceInfo>> {
  const reply = (await c.serviceList()) as { messages: { services: ServiceInfo[] }[] };
  return new Map(reply.messages[0]!.services.map((s) => [s.id, s]));
}

/** The PID in the service's latest Running event ("Process ... started with PID n"). */
async function pidOf(id: string): Promise<number> {
  const s = (await services()).get(id)!;
  const running = s.events.events.filter((e) => e.state === "Running" && /started with PID/.test(e.msg)).at(-1);
  return Number(/PID (\d+)$/.exec(running!.msg)![1]);
}

async function serviceEvents(fromId = ""): Promise<{ id: string; service: string; action: number; message: string }[]> {
  // The backlog comes at once; the stream itself never ends.
  const all: EventMsg[] = [];
  const stream = c.machine.Events(
    fromId ? { tail_id: fromId } : { tail_events: -1 },
    c.metadata(),
  ) as grpc.ClientReadableStream<EventMsg>;
  // Read until the stream goes quiet after its first message (the backlog arrives as one burst).
  await new Promise<void>((resolve) => {
    // Nothing newer than tail_id: nothing arrives at all.
    let quiet: NodeJS.Timeout | undefined = setTimeout(resolve, 5000);
    stream.on("data", (e: EventMsg) => {
      all.push(e);
      clearTimeout(quiet);
      quiet = setTimeout(resolve, 300);
    });
    stream.on("error", () => undefined);
  });
  stream.cancel();
  return all
    .filter((e) => e.data.type_url === "talos/runtime/machine.ServiceStateEvent")
    .map((e) => ({
      id: e.id,
      ...(decode("machine.ServiceStateEvent", e.data.value) as { service: string; action: number; message: string }),
    }));
}

async function expectUnknown(p: Promise<unknown>, details: string): Promise<void> {
  const err = await p.then(
    () => assert.fail("expected an error"),
    (e: grpc.ServiceError) => e,
  );
  assert.equal(err.code, grpc.status.UNKNOWN, err.details);
  assert.equal(err.details, details);
}

const logs = async (id: string, tailLines: number) =>
  Buffer.concat(
    (await c.collect<{ bytes: Buffer }>(c.machine, "Logs", { namespace: "system", id, tail_lines: tailLines })).map(
      (d) => d.bytes,
    ),
  ).toString();

before(async () => {
  stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-services-"));
  const port = await freePort();
  trustdPort = await freePort();
  const generated = await generateConfigs({
    clusterName: "services",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
    talosconfigEndpoints: [`127.0.0.1:${port}`],
  });
  const ctx = parseTalosconfig(generated.talosconfig);
  const admin: ClientCredentials = { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key };
  sandbox = startSandbox(stateDir, port, ["--trustd-listen", `127.0.0.1:${trustdPort}`]);
  insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  await eventually(() => insecure.disks());
  udpServer = dgram.createSocket("udp4");
  udpServer.on("message", (m) => udpRecords.push(JSON.parse(m.toString()) as Record<string, unknown>));
  await new Promise<void>((resolve) => udpServer.bind(0, "127.0.0.1", resolve));
  tcpServer = net.createServer((conn) => {
    let buf = "";
    conn.on("data", (d) => {
      buf += d.toString();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        tcpRecords.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
        buf = buf.slice(nl + 1);
      }
    });
  });
  await new Promise<void>((resolve) => tcpServer.listen(0, "127.0.0.1", resolve));
  const logging = [
    "    logging:",
    "        destinations:",
    `            - endpoint: udp://127.0.0.1:${udpServer.address().port}/`,
    "              format: json_lines",
    "              extraTags:",
    "                  cluster: services",
    `            - endpoint: tcp://127.0.0.1:${(tcpServer.address() as net.AddressInfo).port}/`,
    "              format: json_lines",
  ].join("\n");
  await insecure.applyConfiguration(generated.controlplane.replace(/^machine:\n/m, `machine:\n${logging}\n`));
  c = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: admin });
  await eventually(async () => {
    const s = await services();
    for (const id of ["apid", "machined", "syslogd", "trustd"]) assert.equal(s.get(id)?.state, "Running", id);
    assert.equal(s.get("trustd")!.health.healthy, true);
  }, 300);
});

after(async () => {
  c?.close();
  insecure?.close();
  await sandbox?.stop();
  udpServer?.close();
  tcpServer?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

test("machined's own entry reads as Talos's; every service has Talos's start events", async () => {
  const s = await services();
  assert.deepEqual(
    s.get("machined")!.events.events.map((e) => [e.state, e.msg]),
    [
      ["Starting", "Starting service"],
      ["Preparing", "Running pre state"],
      ["Preparing", "Creating service runner"],
      ["Running", "Service started as goroutine"],
      ["Running", "Health check successful"],
    ],
  );
  // trustd runs in machined's process: its runner is a goroutine, as Talos's in-process services.
  assert.deepEqual(
    s
      .get("trustd")!
      .events.events.slice(0, 4)
      .map((e) => e.msg),
    ["Starting service", "Running pre state", "Creating service runner", "Service started as goroutine"],
  );
  // A child process's runner is named by its command line and PID.
  const syslogd = s.get("syslogd")!.events.events.find((e) => e.state === "Running")!;
  assert.match(syslogd.msg, /^Process Process\(\[.*syslog-relay.*\]\) started with PID \d+$/);
});

/** Resolves once something accepts a TCP connection on 127.0.0.1:port, rejects when refused. */
const connects = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port }, () => (sock.destroy(), resolve()));
    sock.once("error", reject);
  });

test("a service whose process dies is restarted (restart=always); Events carries each transition in order", async () => {
  const before = await pidOf("syslogd");
  const mark = (await serviceEvents()).at(-1)!.id;
  assert.ok(mark);
  process.kill(before, "SIGKILL");
  await eventually(async () => assert.notEqual(await pidOf("syslogd"), before));
  const after = await pidOf("syslogd");
  await eventually(async () => {
    const syslogd = (await serviceEvents(mark)).filter((e) => e.service === "syslogd");
    // Talos's words: the runner as Process([...]) (the same text as in its Running event), Go's wording of the signal.
    const runner = /^Process (Process\(.*\)) started with PID \d+$/.exec(syslogd[1]?.message ?? "")?.[1];
    assert.deepEqual(
      syslogd.map((e) => [e.action, e.message]),
      [
        [2, `Error running ${runner}, going to restart forever: signal: killed`],
        [3, syslogd[1]?.message ?? ""],
        [3, "Health check successful"],
      ],
    );
    assert.match(syslogd[1]!.message, new RegExp(`started with PID ${after}$`));
  });
});

test("ServiceStop, ServiceStart and ServiceRestart; services that do not allow them answer Talos's errors", async () => {
  const mark = (await serviceEvents()).at(-1)!.id;
  assert.deepEqual(await c.unary(c.machine, "ServiceStop", { id: "trustd" }), {
    messages: [{ metadata: null, resp: 'Service "trustd" stopped' }],
  });
  assert.equal((await services()).get("trustd")!.state, "Finished");
  // Stopped means its listener is closed, though it ran in machined's process.
  await assert.rejects(connects(trustdPort), (err: NodeJS.ErrnoException) => err.code === "ECONNREFUSED");
  assert.deepEqual(await c.unary(c.machine, "ServiceStart", { id: "trustd" }), {
    messages: [{ metadata: null, resp: 'Service "trustd" started' }],
  });
  await eventually(async () => assert.equal((await services()).get("trustd")!.state, "Running"));
  await connects(trustdPort);
  assert.deepEqual(await c.unary(c.machine, "ServiceRestart", { id: "trustd" }), {
    messages: [{ metadata: null, resp: 'Service "trustd" restarted' }],
  });
  await eventually(async () => assert.equal((await services()).get("trustd")!.state, "Running"));
  await connects(trustdPort);
  await eventually(async () => {
    const states = (await serviceEvents(mark)).filter((e) => e.service === "trustd").map((e) => e.action);
    // Stopping, Finished; Starting, Preparing x2, Running, healthy; and the restart: the same again.
    const run = [8, 1, 1, 3, 3];
    assert.deepEqual(states, [4, 5, ...run, 4, 5, ...run]);
  });
  await expectUnknown(
    c.unary(c.machine, "ServiceStop", { id: "apid" }),
    `service "apid" doesn't support stop operation via API`,
  );
  await expectUnknown(
    c.unary(c.machine, "ServiceRestart", { id: "machined" }),
    `service "machined" doesn't support restart operation via API`,
  );
  await expectUnknown(
    c.unary(c.machine, "ServiceStart", { id: "nosuchservice" }),
    `service "nosuchservice" not defined`,
  );
});

test("every service ServiceList lists has a log Logs answers for, as on Talos", async () => {
  const listed = [...(await services()).keys()].sort();
  assert.deepEqual(listed, ["apid", "machined", "syslogd", "trustd"]);
  for (const id of listed) await logs(id, 0);
});

test("Logs: the tail and a follow return exactly the lines the service printed (its /var/log copy); unknown ids as Talos", async () => {
  const file = path.join(stateDir, "var", "log", "trustd.log");
  const printed = () => readFileSync(file, "utf8");
  await eventually(async () => assert.ok(printed().split("\n").length > 4));
  const lines = printed().split("\n").slice(0, -1);
  assert.equal(await logs("trustd", 3), lines.slice(-3).join("\n") + "\n");
  assert.equal(await logs("trustd", -1), printed(), "the whole log, kept across the restarts above");
  assert.equal(await logs("trustd", 0), "");

  // Follow from now, then restart trustd: what arrives is what it printed since.
  const startSize = Buffer.byteLength(printed());
  let followed = "";
  const stream = c.machine.Logs(
    { namespace: "system", id: "trustd", follow: true, tail_lines: 0 },
    c.metadata(),
  ) as grpc.ClientReadableStream<{ bytes: Buffer }>;
  stream.on("data", (d: { bytes: Buffer }) => (followed += d.bytes.toString()));
  stream.on("error", () => undefined);
  await new Promise((r) => setTimeout(r, 200)); // the stream is open (a line before it would be in the file, not in the follow)
  await c.unary(c.machine, "ServiceRestart", { id: "trustd" });
  await eventually(async () => {
    const since = Buffer.from(printed()).subarray(startSize).toString();
    assert.match(since, /trustd listening/);
    assert.equal(followed, since);
  });
  stream.cancel();

  const machined = await logs("machined", 2);
  assert.match(
    machined,
    /^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d\.\d{6} \[basalt\] .*\n\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d\.\d{6} \[basalt\] .*\n$/,
  );
  const containers = (await c.unary(c.machine, "LogsContainers")) as { messages: { ids: string[] }[] };
  assert.deepEqual(containers.messages[0]!.ids, ["apid", "controller-runtime", "machined", "syslogd", "trustd"]);
  const err = await c.collect(c.machine, "Logs", { namespace: "system", id: "nosuchservice", tail_lines: -1 }).then(
    () => assert.fail("expected an error"),
    (e: grpc.ServiceError) => e,
  );
  assert.equal(err.code, grpc.status.UNKNOWN);
  assert.equal(err.details, 'log "nosuchservice" was not registered');
});

test("syslogd: RFC3164 and RFC5424 messages sent to its socket read back with Logs syslogd, as Talos's JSON", async () => {
  const socket = path.join(stateDir, "dev", "log");
  await eventually(async () => assert.equal((await services()).get("syslogd")?.state, "Running"));
  // util-linux's logger, as a program on the node would log.
  execFileSync("logger", [
    "-u",
    socket,
    "--rfc3164",
    "-i",
    "-t",
    "basalt-test",
    "-p",
    "daemon.warning",
    "--",
    "hello from 3164",
  ]);
  execFileSync("logger", [
    "-u",
    socket,
    "--rfc5424=notq",
    "-t",
    "basalt-app",
    "-p",
    "local0.info",
    "--msgid",
    "ID47",
    "--",
    "hello from 5424",
  ]);
  const read = async () =>
    (await logs("syslogd", -1))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  await eventually(async () => assert.equal((await read()).length, 2));
  const [bsd, ietf] = await read();
  assert.deepEqual(Object.keys(bsd!), ["content", "facility", "hostname", "priority", "severity", "tag", "timestamp"]);
  assert.deepEqual(
    [bsd!["content"], bsd!["tag"], bsd!["hostname"], bsd!["priority"], bsd!["facility"], bsd!["severity"]],
    ["hello from 3164", "basalt-test", os.hostname(), 28, 3, 4],
  );
  assert.match(String(bsd!["timestamp"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.deepEqual(Object.keys(ietf!), [
    "app_name",
    "facility",
    "hostname",
    "message",
    "msg_id",
    "priority",
    "proc_id",
    "severity",
    "structured_data",
    "timestamp",
    "version",
  ]);
  assert.deepEqual(
    [
      ietf!["message"],
      ietf!["app_name"],
      ietf!["msg_id"],
      ietf!["priority"],
      ietf!["facility"],
      ietf!["severity"],
      ietf!["version"],
      ietf!["hostname"],
    ],
    ["hello from 5424", "basalt-app", "ID47", 134, 16, 6, 1, os.hostname()],
  );
});

test("machine.logging.destinations: each log line goes to UDP and TCP as Talos's json_lines record, with the extra tags", async () => {
  const socket = path.join(stateDir, "dev", "log");
  execFileSync("logger", ["-u", socket, "--rfc3164", "-i", "-t", "shipping-test", "--", "shipped line"]);
  const source = async () => (await logs("syslogd", -1)).split("\n").filter((l) => l.includes("shipped line"));
  await eventually(async () => assert.equal((await source()).length, 1));
  const [line] = await source();
  const expected = {
    ...(JSON.parse(line!) as Record<string, unknown>),
    "talos-service": "syslogd",
    msg: "",
    "talos-level": "info",
  };
  const shipped = (records: Record<string, unknown>[]) =>
    records
      .filter((r) => r["content"] === "shipped line")
      .map(({ "talos-time": time, ...rest }) => {
        assert.match(String(time), /^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
        return rest;
      });
  await eventually(async () => {
    assert.deepEqual(shipped(udpRecords), [{ ...expected, cluster: "services" }]);
    assert.deepEqual(shipped(tcpRecords), [expected]);
  });
  // What was logged before the destinations were configured went first: trustd's first line, as its log holds it (text, the message whole).
  const trustdFirst = (await logs("trustd", -1)).split("\n")[0]!;
  assert.ok(
    tcpRecords.some((r) => r["talos-service"] === "trustd" && r["msg"] === trustdFirst),
    "trustd's first line was shipped",
  );
});
