// The read RPCs through the real sandbox process (machined + apid, mutual TLS) with our
// client: Read, List, Mounts, Dmesg (tail, follow, cancel) and a talosconfig from
// GenerateClientConfiguration used with the role it grants.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-reads-"));
const tree = mkdtempSync(path.join(os.tmpdir(), "basalt-reads-tree-"));
let sandbox: SandboxProcess;
let port = 0;
let config = "";
const clients: NodeClient[] = [];
let admin: NodeClient;

function mtls(material: { ca: string; crt: string; key: string }): NodeClient {
  const c = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "mtls", ...material } });
  clients.push(c);
  return c;
}
const code = (expected: grpc.status, details?: RegExp) => (err: grpc.ServiceError) =>
  err.code === expected && (!details || details.test(err.details));

before(async () => {
  ({ sandbox, port, config, admin } = await startConfiguredSandbox({
    clusterName: "reads",
    stateDir,
    args: ["--apid-in-process"],
  }));
  clients.push(admin);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
  rmSync(tree, { recursive: true, force: true });
});

test("Read: a file, /proc/sys/kernel/random/boot_id (what reboot --wait reads); a directory and a missing path are refused", async () => {
  const file = path.join(tree, "hello.txt");
  writeFileSync(file, "hello from the node\n");
  assert.equal((await admin.read(file)).toString(), "hello from the node\n");
  const bootId = (await admin.read("/proc/sys/kernel/random/boot_id")).toString();
  assert.equal(bootId, readFileSync("/proc/sys/kernel/random/boot_id", "utf8"));
  await assert.rejects(admin.read(tree), code(grpc.status.INVALID_ARGUMENT, /^path must be a regular file/));
  await assert.rejects(
    admin.read(path.join(tree, "missing")),
    code(grpc.status.NOT_FOUND, /^stat .*missing: no such file or directory$/),
  );
});

test("List: a temp tree with and without a depth bound", async () => {
  mkdirSync(path.join(tree, "d1", "d2"), { recursive: true });
  writeFileSync(path.join(tree, "d1", "f1"), "1");
  writeFileSync(path.join(tree, "d1", "d2", "f2"), "22");
  type Info = { name: string; relative_name: string; size: number; is_dir: boolean; error: string };
  const names = async (req: object) =>
    ((await admin.list({ root: tree, ...req })) as Info[]).map((f) => f.relative_name);
  assert.deepEqual(await names({}), [".", "d1", "hello.txt"]);
  assert.deepEqual(await names({ recurse: true, recursion_depth: 2 }), [".", "d1", "d1/d2", "d1/f1", "hello.txt"]);
  assert.deepEqual(await names({ recurse: true }), [".", "d1", "d1/d2", "d1/d2/f2", "d1/f1", "hello.txt"]);
  const f2 = ((await admin.list({ root: path.join(tree, "d1", "d2", "f2") })) as Info[])[0]!;
  assert.deepEqual([f2.name, f2.size, f2.is_dir, f2.error], [path.join(tree, "d1", "d2", "f2"), 2, false, ""]);
  await assert.rejects(admin.list({ root: path.join(tree, "missing") }), code(grpc.status.NOT_FOUND));
});

test("Mounts lists / with its size", async () => {
  const reply = (await admin.mounts()) as { messages: { stats: { mounted_on: string; size: number }[] }[] };
  const root = reply.messages[0]!.stats.find((m) => m.mounted_on === "/");
  assert.ok(root && root.size > 0, "/ is mounted and has a size");
});

type Data = { bytes: Buffer; metadata?: { error: string } };
const line =
  /^(kern|user|daemon|syslog|local\d): +(emerg|alert|crit|err|warning|notice|info|debug): \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\]: /;

/** How many descriptors of the sandbox have /dev/kmsg open. */
function kmsgReaders(): number {
  const fdDir = `/proc/${sandbox.child.pid}/fd`;
  return readdirSync(fdDir).filter((fd) => {
    try {
      return readlinkSync(path.join(fdDir, fd)) === "/dev/kmsg";
    } catch {
      return false; // closed while we looked
    }
  }).length;
}

test("Dmesg: the buffered kernel log in talosctl's line format; tail without follow sends nothing new", async () => {
  const all = await admin.collect<Data>(admin.machine, "Dmesg", { follow: false, tail: false });
  assert.ok(all.length > 0, "the kernel log has records");
  for (const m of all.slice(0, 20)) assert.match(m.bytes.toString(), line);
  assert.ok(
    all.every((m) => m.bytes.toString().endsWith("\n")),
    "each record ends its line, as talosctl prints it",
  );
  const tailOnly = await admin.collect<Data>(admin.machine, "Dmesg", { follow: false, tail: true });
  assert.deepEqual(tailOnly, [], "tail: only records logged from now on");
  await eventually(async () => assert.equal(kmsgReaders(), 0));
});

test("Dmesg follow streams new kernel records, and cancelling it (again and again) ends the handler cleanly", async () => {
  for (let round = 0; round < 12; round++) {
    const marker = `basalt-reads-${process.pid}-${round}`;
    const seen = admin.collectUntil<Data>(
      admin.machine,
      "Dmesg",
      { follow: true, tail: true },
      (m) => m.bytes.toString().includes(marker),
      15_000,
    );
    // The handler opens the log when the call arrives: keep writing the marker until it is seen.
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        writeFileSync("/dev/kmsg", `<5>${marker}\n`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const got = await seen;
    stop = true;
    await writer;
    // Records written from user space carry the user facility.
    assert.match(got.at(-1)!.bytes.toString(), new RegExp(`^user: +notice: \\[.*\\]: ${marker}\\n$`));
    assert.ok(
      got.every((m) => !m.bytes.toString().includes("Linux version")),
      "tail skips the boot records",
    );
  }
  await eventually(async () => assert.equal(kmsgReaders(), 0, "every cancelled stream closed /dev/kmsg"));
  assert.doesNotMatch(sandbox.output(), /MaxListenersExceededWarning/);
  await admin.version();
});

test("GenerateClientConfiguration: a reader talosconfig reads but cannot apply a config or read files; non-admins are refused", async () => {
  const reply = await admin.generateClientConfiguration(["os:reader"], 3600);
  const m = reply.messages[0]!;
  const ctx = parseTalosconfig(m.talosconfig.toString());
  assert.equal(ctx.name, "reader@reads");
  assert.equal(ctx.crt, m.crt.toString());
  const reader = mtls(ctx);
  assert.ok((await reader.version()) as object);
  assert.ok(((await reader.list({ root: tree })) as object[]).length > 0, "List is open to os:reader");
  await assert.rejects(reader.applyConfiguration(config, { mode: 1 }), code(grpc.status.PERMISSION_DENIED));
  await assert.rejects(reader.read(path.join(tree, "hello.txt")), code(grpc.status.PERMISSION_DENIED));
  await assert.rejects(reader.generateClientConfiguration(["os:admin"], 3600), code(grpc.status.PERMISSION_DENIED));

  const operator = mtls(
    parseTalosconfig(
      (await admin.generateClientConfiguration(["os:operator"], 3600)).messages[0]!.talosconfig.toString(),
    ),
  );
  await assert.rejects(operator.generateClientConfiguration(["os:admin"], 3600), code(grpc.status.PERMISSION_DENIED));
  await assert.rejects(
    admin.generateClientConfiguration(["os:reader"], 0),
    code(grpc.status.INVALID_ARGUMENT, /^crt_ttl should be positive$/),
  );
});
