// The proto loader: method table, codecs with our conversion convention, typed
// and raw grpc-js service definitions, and finding agent/api from a bundle.
import * as grpc from "@grpc/grpc-js";
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import {
  allMethods,
  apiRoot,
  decode,
  encode,
  lookupMessage,
  protoDir,
  rawServiceDefinition,
  serviceDefinition,
} from "../../../agent/src/api/index.js";
import { InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const rpcIndexPath = path.join(repoRoot, "test/fixtures/talos-api/rpc-index.tsv");

const SERVICES = [
  "cluster.ClusterService",
  "cosi.resource.State",
  "inspect.InspectService",
  "machine.MachineService",
  "securityapi.SecurityService",
  "storage.StorageService",
  "time.TimeService",
];

test("protoDir is this repository's agent/api", () => {
  assert.equal(protoDir, path.join(repoRoot, "agent", "api"));
  assert.ok(apiRoot().lookupService("machine.MachineService"));
});

test("allMethods lists 51 MachineService methods and the other services by full name", () => {
  const methods = allMethods();
  assert.equal(methods.filter((m) => m.service === "machine.MachineService").length, 51);
  assert.deepEqual([...new Set(methods.map((m) => m.service))].sort(), SERVICES);
  const version = methods.find((m) => m.path === "/machine.MachineService/Version");
  assert.deepEqual(version, {
    service: "machine.MachineService",
    name: "Version",
    path: "/machine.MachineService/Version",
    requestType: "google.protobuf.Empty",
    responseType: "machine.VersionResponse",
    requestStream: false,
    responseStream: false,
  });
  const recover = methods.find((m) => m.path === "/machine.MachineService/EtcdRecover");
  assert.equal(recover?.requestStream, true);
  assert.equal(recover?.responseStream, false);
  // Callers get copies: editing one must not change the table.
  version!.path = "changed";
  assert.ok(allMethods().some((m) => m.path === "/machine.MachineService/Version"));
});

test("allMethods agrees with rpc-index.tsv: every RPC, its types and streaming flags", () => {
  const [header, ...rows] = fs
    .readFileSync(rpcIndexPath, "utf8")
    .trim()
    .split("\n")
    .map((l) => l.split("\t"));
  const col = (name: string) => {
    const i = header!.indexOf(name);
    assert.notEqual(i, -1, `rpc-index.tsv has no column ${name}`);
    return i;
  };
  const [cM, cReq, cRes, cCs, cSs] = ["method", "request", "response", "client_streaming", "server_streaming"].map(
    col,
  ) as number[];
  const expected = rows
    .map((r) => `${r[cM!]} ${r[cReq!]} -> ${r[cRes!]} client_streaming=${r[cCs!]} server_streaming=${r[cSs!]}`)
    .sort();
  const ours = allMethods()
    .map(
      (m) =>
        `${m.service}.${m.name} ${m.requestType} -> ${m.responseType} client_streaming=${m.requestStream} server_streaming=${m.responseStream}`,
    )
    .sort();
  assert.deepEqual(ours, expected);
  assert.equal(expected.filter((l) => l.startsWith("machine.MachineService.")).length, 51);
});

test("encode writes the protobuf wire bytes", () => {
  // field 1 (metadata), length 4: field 1 (hostname), length 2, "n1"
  assert.equal(encode("common.Empty", { metadata: { hostname: "n1" } }).toString("hex"), "0a040a026e31");
  // enum by number or by name; bytes from a Buffer. data is field 1 (tag 0x0a), mode field 4 (tag 0x20).
  const byNumber = encode("machine.ApplyConfigurationRequest", { data: Buffer.from("x"), mode: 3 });
  assert.equal(byNumber.toString("hex"), "0a01782003");
  assert.deepEqual(encode("machine.ApplyConfigurationRequest", { data: Buffer.from("x"), mode: "STAGED" }), byNumber);
  assert.ok(Buffer.isBuffer(byNumber));
});

test("machine.VersionResponse round-trips as a plain object with snake_case keys and defaults", () => {
  const reply = {
    messages: [
      {
        metadata: { hostname: "node-1" },
        version: { tag: "v1.7.6", go_version: "go1.22.5", arch: "amd64" },
        platform: { name: "metal", mode: "metal" },
        features: { rbac: true },
      },
    ],
  };
  const decoded = decode("machine.VersionResponse", encode("machine.VersionResponse", reply));
  assert.deepEqual(decoded, {
    messages: [
      {
        metadata: { hostname: "node-1", error: "", status: null },
        version: { tag: "v1.7.6", sha: "", built: "", go_version: "go1.22.5", os: "", arch: "amd64" },
        platform: { name: "metal", mode: "metal" },
        features: { rbac: true },
      },
    ],
  });
});

test("decode gives enums and 64-bit integers as numbers, bytes as Buffer", () => {
  const mem = decode(
    "machine.MemoryResponse",
    encode("machine.MemoryResponse", { messages: [{ meminfo: { memtotal: 2 ** 40 + 1 } }] }),
  );
  const meminfo = (mem.messages as { meminfo: { memtotal: unknown; memfree: unknown } }[])[0]!.meminfo;
  assert.equal(meminfo.memtotal, 2 ** 40 + 1);
  assert.equal(meminfo.memfree, 0);
  const apply = decode("machine.ApplyConfigurationRequest", Buffer.from("0a01782003", "hex"));
  assert.equal(apply.mode, 3);
  assert.ok(Buffer.isBuffer(apply.data));
  assert.equal((apply.data as Buffer).toString(), "x");
  // a plain Uint8Array input still yields Buffers
  const fromU8 = decode("common.Data", new Uint8Array(encode("common.Data", { bytes: Buffer.from("hi") })));
  assert.ok(Buffer.isBuffer(fromU8.bytes));
});

test("proto3 optional fields keep presence: WatchRequest.id set to '' is sent, absent is not", () => {
  const single = encode("cosi.resource.WatchRequest", { namespace: "n", type: "t", id: "" });
  assert.equal(single.toString("hex"), "0a016e1201741a00");
  const kind = encode("cosi.resource.WatchRequest", { namespace: "n", type: "t" });
  assert.equal(kind.toString("hex"), "0a016e120174");
  assert.equal(decode("cosi.resource.WatchRequest", single).id, "");
  assert.ok(!("id" in decode("cosi.resource.WatchRequest", kind)));
});

test("a Date is accepted where a google.protobuf.Timestamp goes", () => {
  const md = decode(
    "cosi.resource.Metadata",
    encode("cosi.resource.Metadata", { created: new Date(1_700_000_000_123) }),
  );
  assert.deepEqual(md.created, { seconds: 1_700_000_000, nanos: 123_000_000 });
});

test("unknown names and malformed bytes raise our error classes", () => {
  assert.throws(() => lookupMessage("machine.NoSuchMessage"), NotFoundError);
  assert.throws(() => encode("machine.MachineService", {}), NotFoundError);
  assert.throws(() => serviceDefinition("machine.VersionResponse"), NotFoundError);
  assert.throws(() => decode("machine.VersionResponse", Buffer.from([0x0a, 0x05, 0x01])), InvalidInputError);
});

test("every method's request and response type, as the method table names it, is a message of agent/api", () => {
  for (const m of allMethods()) {
    assert.equal(lookupMessage(m.requestType).fullName, `.${m.requestType}`, m.path);
    assert.equal(lookupMessage(m.responseType).fullName, `.${m.responseType}`, m.path);
  }
});

test("serviceDefinition: typed codecs per method, keyed by method name", () => {
  for (const service of SERVICES) {
    const def = serviceDefinition(service);
    const methods = allMethods().filter((m) => m.service === service);
    assert.deepEqual(Object.keys(def).sort(), methods.map((m) => m.name).sort());
    for (const m of methods) {
      assert.equal(def[m.name]!.path, m.path);
      assert.equal(def[m.name]!.requestStream, m.requestStream);
      assert.equal(def[m.name]!.responseStream, m.responseStream);
    }
  }
  const version = serviceDefinition("machine.MachineService").Version!;
  const reply = { messages: [{ metadata: { hostname: "n1" } }] };
  const bytes = version.responseSerialize(reply);
  assert.deepEqual(bytes, encode("machine.VersionResponse", reply));
  assert.deepEqual(version.responseDeserialize(bytes), decode("machine.VersionResponse", bytes));
});

test("rawServiceDefinition passes message bytes through unchanged", () => {
  const bytes = Buffer.from("0a040a026e31ff00", "hex"); // need not even be a valid message
  for (const service of SERVICES) {
    const raw = rawServiceDefinition(service);
    const typed = serviceDefinition(service);
    assert.deepEqual(Object.keys(raw).sort(), Object.keys(typed).sort());
    for (const [name, m] of Object.entries(raw)) {
      assert.equal(m.path, typed[name]!.path);
      assert.equal(m.requestStream, typed[name]!.requestStream);
      assert.equal(m.responseStream, typed[name]!.responseStream);
      for (const fn of [m.requestSerialize, m.requestDeserialize, m.responseSerialize, m.responseDeserialize]) {
        assert.deepEqual(fn(bytes), bytes);
      }
    }
  }
});

test("raw server and typed client talk over a real gRPC channel (unary and server stream)", async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-api-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const address = `unix:${path.join(dir, "api.sock")}`;
  const seen: Buffer[] = [];
  const server = new grpc.Server();
  server.addService(rawServiceDefinition("machine.MachineService"), {
    Version: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      seen.push(call.request);
      cb(null, encode("machine.VersionResponse", { messages: [{ version: { tag: "v1.7.6" } }] }));
    },
    Read: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      seen.push(call.request);
      call.write(encode("common.Data", { bytes: Buffer.from("ab") }));
      call.write(encode("common.Data", { bytes: Buffer.from("cd") }));
      call.end();
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  t.after(() => server.forceShutdown());
  const Client = grpc.makeGenericClientConstructor(serviceDefinition("machine.MachineService"), "MachineService");
  const client = new Client(address, grpc.credentials.createInsecure());
  t.after(() => client.close());
  // Generic clients are indexed by method name; their types are not known statically.
  const call = client as unknown as Record<
    string,
    (...args: unknown[]) => grpc.ClientReadableStream<Record<string, unknown>>
  >;

  const version = await new Promise<Record<string, unknown>>((resolve, reject) =>
    call.Version!({}, (err: grpc.ServiceError | null, res: Record<string, unknown>) =>
      err ? reject(err) : resolve(res),
    ),
  );
  assert.equal((version.messages as { version: { tag: string } }[])[0]!.version.tag, "v1.7.6");

  const chunks: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const stream = call.Read!({ path: "/proc/version" });
    stream.on("data", (m: Record<string, unknown>) => chunks.push((m.bytes as Buffer).toString()));
    stream.on("error", reject);
    stream.on("end", resolve);
  });
  assert.deepEqual(chunks, ["ab", "cd"]);
  assert.deepEqual(seen, [Buffer.alloc(0), encode("machine.ReadRequest", { path: "/proc/version" })]);
});

test("a bundle finds the api directory beside it (ESM and CJS) and keeps bytes as Buffer", async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-bundle-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.symlinkSync(protoDir, path.join(dir, "api"));
  const entry = path.join(dir, "entry.ts");
  const loader = path.join(repoRoot, "agent", "src", "api", "index.ts");
  fs.writeFileSync(
    entry,
    `import { protoDir, allMethods, encode, decode } from ${JSON.stringify(loader)};\n` +
      `const d = decode("common.Data", encode("common.Data", { bytes: Buffer.from("hi") }));\n` +
      `console.log(JSON.stringify({ protoDir, methods: allMethods().length, buffer: Buffer.isBuffer(d.bytes) }));\n`,
  );
  for (const format of ["esm", "cjs"] as const) {
    const outfile = path.join(dir, format === "esm" ? "bundle.mjs" : "bundle.cjs");
    await build({ entryPoints: [entry], bundle: true, platform: "node", format, outfile, logLevel: "silent" });
    const out = JSON.parse(execFileSync(process.execPath, [outfile], { cwd: os.tmpdir(), encoding: "utf8" }));
    assert.deepEqual(out, { protoDir: path.join(dir, "api"), methods: allMethods().length, buffer: true }, format);
  }
});

test("BASALT_PROTO_DIR overrides the search, and a wrong one is reported plainly", () => {
  const loader = path.join(repoRoot, "dist", "agent", "src", "api", "index.js");
  const script = `import(${JSON.stringify(loader)}).then((api) => { try { api.apiRoot(); console.log("loaded"); } catch (e) { console.log(e.name + ": " + e.message); } });`;
  const run = (dir: string) =>
    execFileSync(process.execPath, ["-e", script], {
      env: { ...process.env, BASALT_PROTO_DIR: dir },
      encoding: "utf8",
    }).trim();
  assert.equal(run(protoDir), "loaded");
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-noapi-"));
  try {
    const out = run(empty);
    assert.match(out, /^NotFoundError: API proto directory not found \(set BASALT_PROTO_DIR\)/);
    assert.ok(out.includes(empty), out);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test("services come from the method table; a package's files are parsed when one of its messages is first used", (t) => {
  // A copy of agent/api whose network definitions do not parse: only a process that reads them fails.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-lazyapi-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.cpSync(protoDir, dir, { recursive: true });
  fs.appendFileSync(path.join(dir, "resource", "definitions", "network", "network.proto"), "\nmessage Broken {\n");
  const loader = path.join(repoRoot, "dist", "agent", "src", "api", "index.js");
  const script = `import(${JSON.stringify(loader)}).then((api) => {
    const out = { services: ${JSON.stringify(SERVICES)}.map((s) => Object.keys(api.serviceDefinition(s)).length), methods: api.allMethods().length };
    out.disks = api.encode("storage.DisksResponse", { messages: [{ disks: [{ size: 1 }] }] }).length;
    try { api.encode("talos.resource.definitions.network.NodeAddressSpec", {}); out.network = "parsed"; } catch (e) { out.network = e.name; }
    console.log(JSON.stringify(out));
  });`;
  const out = JSON.parse(
    execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, BASALT_PROTO_DIR: dir },
      encoding: "utf8",
    }),
  );
  assert.deepEqual(out, {
    services: SERVICES.map((s) => allMethods().filter((m) => m.service === s).length),
    methods: allMethods().length,
    disks: encode("storage.DisksResponse", { messages: [{ disks: [{ size: 1 }] }] }).length,
    network: "ProtoLoadError",
  });
});
