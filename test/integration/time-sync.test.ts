// Time sync end to end: chrony serves NTP in one network namespace, a sandbox with a
// fake clock 5 s behind the host's runs in another (both on one bridge). The sandbox
// steps its clock by the offset chrony shows, TimeStatus turns synced, and
// TimeService.Time answers with chrony's time and the node's, now close together.
// chrony runs with -x: it never touches the host clock, and neither does the sandbox.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { canRunNetns, freeSubnet, ip } from "./helpers/netns.js";
import { eventually, stopProcess } from "./helpers/sandbox.js";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");
const SUBNET = freeSubnet("10.214", 61);
const NTP = `${SUBNET}.1`;
const NODE = `${SUBNET}.2`;
const HOST = `${SUBNET}.254`;
const FAKE_OFFSET_MS = -5000;

const tag = randomBytes(3).toString("hex");
const bridge = `tdb${tag}`;
const ns = { ntp: `td-ntp-${tag}`, node: `td-node-${tag}` };
const skip = canRunNetns() ?? (hasChrony() ? undefined : "chronyd is not installed (scripts/setup-deps.sh)");
let root = "";
let chrony: ChildProcess | undefined;
let node: ChildProcess | undefined;
let nodeOut = "";
let client: NodeClient | undefined;

function hasChrony(): boolean {
  try {
    execFileSync("chronyd", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function addNamespace(name: string, address: string, i: number): void {
  ip("netns", "add", name);
  ip("-n", name, "link", "set", "lo", "up");
  ip("link", "add", `tdv${tag}${i}`, "type", "veth", "peer", "name", "eth0", "netns", name);
  ip("link", "set", `tdv${tag}${i}`, "master", bridge, "up");
  ip("-n", name, "addr", "add", `${address}/24`, "dev", "eth0");
  ip("-n", name, "link", "set", "eth0", "up");
}

before(async () => {
  if (skip) return;
  root = mkdtempSync(path.join(os.tmpdir(), "basalt-time-"));
  ip("link", "add", bridge, "type", "bridge");
  ip("addr", "add", `${HOST}/24`, "dev", bridge);
  ip("link", "set", bridge, "up");
  addNamespace(ns.ntp, NTP, 1);
  addNamespace(ns.node, NODE, 2);
  const conf = path.join(root, "chrony.conf");
  writeFileSync(
    conf,
    [
      `local stratum 8`,
      `allow all`,
      `bindaddress ${NTP}`,
      `cmdport 0`,
      `pidfile ${root}/chronyd.pid`,
      `driftfile ${root}/drift`,
      "",
    ].join("\n"),
  );
  chrony = spawn("ip", ["netns", "exec", ns.ntp, "chronyd", "-x", "-d", "-u", "root", "-f", conf], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  process.once("exit", () => chrony?.kill("SIGKILL"));
});

after(async () => {
  client?.close();
  if (node) await stopProcess(node);
  if (chrony) await stopProcess(chrony);
  if (skip) return;
  for (const n of Object.values(ns)) execFileSync("ip", ["netns", "del", n], { stdio: "ignore" });
  execFileSync("ip", ["link", "del", bridge], { stdio: "ignore" });
  rmSync(root, { recursive: true, force: true });
});

interface TimeMessage {
  server: string;
  localtime: { seconds: string | number; nanos: number };
  remotetime: { seconds: string | number; nanos: number };
}

const ms = (t: { seconds: string | number; nanos: number }) => Number(t.seconds) * 1000 + t.nanos / 1e6;

test("a sandbox whose clock is 5 s behind follows chrony: a 5 s step, TimeStatus synced, Time reports the server and both clocks", {
  skip,
  timeout: 120_000,
}, async () => {
  const generated = await generateConfigs({
    clusterName: "timesync",
    endpoint: `https://${NODE}:6443`,
    installDisk: "",
    talosconfigEndpoints: [NODE],
  });
  const config = generated.controlplane.replace(
    /^machine:\n/m,
    `machine:\n    time:\n        servers:\n            - ${NTP}\n`,
  );
  const stateDir = path.join(root, "node");
  mkdirSync(path.join(stateDir, "system", "state"), { recursive: true });
  writeFileSync(path.join(stateDir, "system", "state", "config.yaml"), config);
  const args = [
    "netns",
    "exec",
    ns.node,
    process.execPath,
    sandboxJs,
    "--state-dir",
    stateDir,
    "--apid-listen",
    `${NODE}:50000`,
    "--trustd-listen",
    `${NODE}:50001`,
    "--fake-clock-offset",
    `${FAKE_OFFSET_MS}ms`,
  ];
  node = spawn("ip", args, { stdio: ["ignore", "pipe", "pipe"] });
  node.stdout!.on("data", (b: Buffer) => (nodeOut += b.toString()));
  node.stderr!.on("data", (b: Buffer) => (nodeOut += b.toString()));
  process.once("exit", () => node?.kill("SIGKILL"));

  const ctx = parseTalosconfig(generated.talosconfig);
  client = new NodeClient({
    endpoint: `${NODE}:50000`,
    credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key },
  });
  const c = client;
  const status = await eventually(async () => {
    const res = (await c.resourceGet("runtime", "TimeStatuses.v1alpha1.talos.dev", "node")) as {
      resource: { spec: { yaml_spec: string } };
    };
    const yaml = res.resource.spec.yaml_spec;
    if (!/synced: true/.test(yaml)) throw new Error(`not synced yet: ${yaml}`);
    return yaml;
  }, 300);
  assert.equal(status, "synced: true\nepoch: 0\nsyncDisabled: false\n");

  // One step (|offset| > 400 ms) by what the fake clock was behind, measured against chrony.
  const steps = [...nodeOut.matchAll(/adjusting time \(jump\) by (-?[\d.]+)ms via ([\d.]+)/g)];
  assert.equal(steps.length, 1, nodeOut);
  assert.equal(steps[0]![2], NTP);
  assert.ok(
    Math.abs(Number(steps[0]![1]) + FAKE_OFFSET_MS) < 400,
    `step of ${steps[0]![1]} ms for a clock ${-FAKE_OFFSET_MS} ms behind`,
  );

  // Time asks the first configured server; the node's clock now agrees with it within the slew range.
  const time = await c.unary<{ messages: TimeMessage[] }>(c.time, "Time");
  assert.equal(time.messages.length, 1);
  assert.equal(time.messages[0]!.server, NTP);
  const offset = ms(time.messages[0]!.remotetime) - ms(time.messages[0]!.localtime);
  assert.ok(Math.abs(offset) < 400, `node and server differ by ${offset} ms after the step`);

  const checked = await c.unary<{ messages: TimeMessage[] }>(c.time, "TimeCheck", { server: NTP });
  assert.equal(checked.messages[0]!.server, NTP);
});
