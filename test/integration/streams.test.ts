// Streamed replies through apid arrive whole: the sandbox (machined plus apid as its own
// process, mutual TLS), each stream compared with the same call made straight to
// machined's socket, the source of truth. Slow readers pause the relay; nothing is lost.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { EventType } from "../../agent/src/grpc/cosi-server.js";
import { eventually, freePort, startSandbox, type SandboxProcess } from "./helpers/sandbox.js";
import { readSlowly } from "./helpers/slow-reader.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-streams-"));
const tree = mkdtempSync(path.join(os.tmpdir(), "basalt-streams-tree-"));
const rdType = "ResourceDefinitions.meta.cosi.dev";
let sandbox: SandboxProcess;
let admin: NodeClient;
let insecure: NodeClient;
let direct: NodeClient;
const clients: NodeClient[] = [];

type Listed = { resource: { metadata: { id: string; version: string } } };
/** The resource definitions' ids, in the order the stream delivered them. */
const definitions = async (c: NodeClient) =>
  (await c.collect<Listed>(c.cosi, "List", { namespace: "meta", type: rdType })).map((r) => r.resource.metadata.id);
type Data = { bytes: Buffer };
type FileInfo = { name: string; size: number };
const sha256 = (chunks: Data[]) =>
  createHash("sha256")
    .update(Buffer.concat(chunks.map((c) => c.bytes)))
    .digest("hex");

before(async () => {
  const port = await freePort();
  const generated = await generateConfigs({
    clusterName: "streams",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
  });
  sandbox = startSandbox(stateDir, port);
  insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  direct = new NodeClient({
    endpoint: `unix:${path.join(stateDir, "system", "run", "machined", "machine.sock")}`,
    credentials: { kind: "socket", roles: ["os:admin"] },
  });
  admin = new NodeClient({
    endpoint: `127.0.0.1:${port}`,
    credentials: { kind: "mtls", ...parseTalosconfig(generated.talosconfig) },
  });
  clients.push(insecure, direct, admin);
  await eventually(() => insecure.disks());

  await maintenanceChecks();
  await insecure.applyConfiguration(generated.controlplane);
  await eventually(() => admin.version());
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(tree, { recursive: true, force: true });
});

/** Maintenance mode (before the config is applied): the insecure listener relays COSI reads too. */
async function maintenanceChecks(): Promise<void> {
  for (const regexp of ["(((", "a[", "x(?=y)"]) {
    const req = { namespace: "meta", type: rdType, options: { id_query: { regexp } } };
    for (const via of [insecure, direct]) {
      await assert.rejects(via.collect(via.cosi, "List", req), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${regexp}: ${err.details}`);
        assert.match(err.details, /^invalid id query regexp /);
        return true;
      });
    }
  }
  const truth = await definitions(direct);
  for (let i = 0; i < 100; i++) assert.deepEqual(await definitions(insecure), truth, `maintenance list ${i}`);
}

test("500 COSI Lists of the resource definitions through apid, 8 at a time, each exactly as machined's socket lists them", {
  timeout: 120_000,
}, async () => {
  const truth = await definitions(direct);
  assert.ok(truth.length > 30, `the definitions: ${truth.length}`);
  let next = 0;
  const worker = async () => {
    while (next < 500) {
      const i = next++;
      assert.deepEqual(await definitions(admin), truth, `list ${i}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
});

test("Watch with bootstrap contents delivers every definition before BOOTSTRAPPED", async () => {
  const truth = await definitions(direct);
  type Watched = { event: { event_type: number; resource: { metadata: { id: string } } }[] };
  for (let i = 0; i < 20; i++) {
    const got = await admin.collectUntil<Watched>(
      admin.cosi,
      "Watch",
      { namespace: "meta", type: rdType, api_version: 1, options: { bootstrap_contents: true } },
      (m) => m.event.some((e) => e.event_type === EventType.BOOTSTRAPPED),
    );
    const created = got
      .flatMap((m) => m.event)
      .filter((e) => e.event_type !== EventType.BOOTSTRAPPED)
      .map((e) => e.resource.metadata.id);
    assert.deepEqual(created, truth, `watch ${i}`);
  }
});

test("Read of a 20 MiB file through apid arrives byte for byte with a reader that keeps pausing", {
  timeout: 120_000,
}, async () => {
  const file = path.join(tree, "big.bin");
  const content = randomBytes(20 * 1024 * 1024);
  writeFileSync(file, content);
  const want = createHash("sha256").update(content).digest("hex");
  const fromSocket = await readSlowly<Data>(direct, direct.machine, "Read", { path: file }, { every: 0 });
  assert.equal(sha256(fromSocket), want, "machined's socket");
  for (const pause of [
    { every: 4, ms: 20 },
    { every: 1, ms: 2 },
  ]) {
    const chunks = await readSlowly<Data>(admin, admin.machine, "Read", { path: file }, pause);
    assert.equal(chunks.length, fromSocket.length, `messages, pausing every ${pause.every}`);
    assert.equal(sha256(chunks), want, `bytes, pausing every ${pause.every}`);
  }
});

test("a reader that cancels a Read mid-way cancels machined's side: the file is closed", async () => {
  const file = path.join(tree, "big.bin");
  const machinedFds = () => {
    const dir = `/proc/${sandbox.child.pid}/fd`;
    return readdirSync(dir).filter((fd) => {
      try {
        return readlinkSync(path.join(dir, fd)) === file;
      } catch {
        return false;
      }
    }).length;
  };
  for (let i = 0; i < 5; i++) {
    const got = await admin.collectUntil<Data>(
      admin.machine,
      "Read",
      { path: file },
      (() => {
        let n = 0;
        return () => ++n === 3;
      })(),
    );
    assert.equal(got.length, 3);
  }
  await eventually(async () => assert.equal(machinedFds(), 0, "every cancelled Read closed the file"));
});

test("List of a tree with 1500 entries and Dmesg arrive whole through apid, read slowly", {
  timeout: 120_000,
}, async () => {
  for (let d = 0; d < 30; d++) {
    mkdirSync(path.join(tree, "many", `d${d}`), { recursive: true });
    for (let f = 0; f < 49; f++) writeFileSync(path.join(tree, "many", `d${d}`, `f${f}`), "x".repeat(f));
  }
  const req = { root: path.join(tree, "many"), recurse: true };
  const truth = (await direct.list(req)) as FileInfo[];
  assert.equal(truth.length, 1 + 30 * 50);
  for (let i = 0; i < 5; i++) {
    const got = await readSlowly<FileInfo>(admin, admin.machine, "List", req, { every: 50, ms: 5 });
    assert.deepEqual(
      got.map((f) => [f.name, f.size]),
      truth.map((f) => [f.name, f.size]),
      `list ${i}`,
    );
  }

  // Between two reads the kernel may log (and drop its oldest records), and each read dates
  // records from its own reckoning of the boot time (whole seconds of uptime, as Talos does).
  // So the read through apid must continue, without a gap, the socket's read just before it,
  // and the socket's read just after must continue it: the same messages, their times apart
  // by one constant.
  const dmesg = async (c: NodeClient, slowly: boolean) =>
    (slowly
      ? await readSlowly<Data>(c, c.machine, "Dmesg", {}, { every: 20, ms: 2 })
      : await c.collect<Data>(c.machine, "Dmesg", {})
    ).map((m) => kmsgLine(m.bytes.toString()));
  for (let i = 0; i < 3; i++) {
    const before = await dmesg(direct, false);
    const viaApid = await dmesg(admin, true);
    const afterwards = await dmesg(direct, false);
    assert.ok(before.length > 0 && viaApid.length > 0);
    assert.ok(
      continues(viaApid, before),
      `dmesg ${i}: ${viaApid.length} records through apid do not continue the socket's ${before.length}`,
    );
    assert.ok(
      continues(afterwards, viaApid),
      `dmesg ${i}: the socket's ${afterwards.length} records afterwards do not continue the ${viaApid.length} through apid`,
    );
  }
});

interface KmsgLine {
  text: string;
  ns: bigint;
}

/** A Dmesg line split into its time (ns since the epoch) and the rest. */
function kmsgLine(line: string): KmsgLine {
  const m = /^(.*?)\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z\]: (.*)$/s.exec(line);
  assert.ok(m, line);
  const ns = BigInt(Date.parse(`${m[2]}Z`)) * 1_000_000n + BigInt((m[3] ?? "").padEnd(9, "0"));
  return { text: `${m[1]}${m[4]}`, ns };
}

/** Whether `later` starts with a tail of `earlier`: older records dropped, newer appended, all times shifted by one offset under 2 s. */
function continues(later: KmsgLine[], earlier: KmsgLine[]): boolean {
  for (let i = 0; i < earlier.length; i++) {
    const tail = earlier.slice(i);
    if (tail.length > later.length) continue;
    const shift = later[0]!.ns - tail[0]!.ns;
    if (shift >= 2_000_000_000n || shift <= -2_000_000_000n) continue;
    if (tail.every((r, k) => later[k]!.text === r.text && later[k]!.ns - r.ns === shift)) return true;
  }
  return false;
}
