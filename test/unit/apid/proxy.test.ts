// apid's raw relay in front of a fake machined: role injection, listener tag,
// routing by node/nodes metadata and one-to-many aggregation.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { allMethods, decode, encode } from "../../../agent/src/api/index.js";
import { buildProxyServer, type Caller } from "../../../agent/src/apid/proxy.js";

const identity = (b: Buffer) => b;
const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-proxy-"));
const socket = path.join(dir, "machine.sock");
let backend: grpc.Server;
let proxy: grpc.Server;
let local: grpc.Client;
let port = 0;
let caller: Caller = { roles: ["os:reader"] };
const seen: grpc.Metadata[] = [];

before(async () => {
  backend = new grpc.Server();
  // Version answers with the roles it was given, in the tag, so the test can see them.
  backend.register(
    "/machine.MachineService/Version",
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      seen.push(call.metadata);
      cb(null, encode("machine.VersionResponse", { messages: [{ version: { tag: call.metadata.get("talos-role").join(",") } }] }));
    },
    identity,
    identity,
    "unary",
  );
  await new Promise<void>((resolve, reject) =>
    backend.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  local = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
  proxy = buildProxyServer({
    methods: allMethods().map((m) => ({ path: m.path, requestStream: m.requestStream, responseStream: m.responseStream })),
    local,
    authenticate: () => caller,
    isSelf: (t) => t === "127.0.0.1" || t === "self",
  });
  port = await new Promise((resolve, reject) =>
    proxy.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
});

after(() => {
  proxy.forceShutdown();
  backend.forceShutdown();
  local.close();
  rmSync(dir, { recursive: true, force: true });
});

function version(md: Record<string, string[]> = {}, path = "/machine.MachineService/Version"): Promise<{ messages: { metadata: { hostname: string } | null; version: { tag: string } | null }[] }> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const meta = new grpc.Metadata();
  for (const [k, vs] of Object.entries(md)) for (const v of vs) meta.add(k, v);
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(path, identity, identity, Buffer.alloc(0), meta, (err, res) => {
      client.close();
      if (err) reject(err);
      else resolve(decode("machine.VersionResponse", res!) as never);
    }),
  );
}

test("relays bytes to machined with the caller's roles; client-sent roles and listener tags are dropped", async () => {
  caller = { roles: ["os:reader"] };
  const r = await version({ "talos-role": ["os:admin"], "basalt-listener": ["maintenance"] });
  assert.equal(r.messages[0]!.version!.tag, "os:reader");
  assert.equal(r.messages[0]!.metadata, null, "one-to-one replies are not tagged");
  assert.deepEqual(seen.at(-1)!.get("basalt-listener"), []);
  caller = { roles: ["os:reader"], maintenance: true };
  await version();
  assert.deepEqual(seen.at(-1)!.get("basalt-listener"), ["maintenance"]);
});

test("nodes metadata fans out and tags each reply with its target", async () => {
  caller = { roles: ["os:admin"] };
  const r = await version({ nodes: ["127.0.0.1,self"] });
  assert.deepEqual(r.messages.map((m) => m.metadata!.hostname), ["127.0.0.1", "self"]);
  assert.deepEqual(r.messages.map((m) => m.version!.tag), ["os:admin", "os:admin"]);
});

test("routing errors as Talos answers them", async () => {
  await assert.rejects(version({ node: ["a", "b"] }), (e: grpc.ServiceError) => e.code === grpc.status.INVALID_ARGUMENT && /single-valued/.test(e.details));
  await assert.rejects(version({ nodes: ["self"] }, "/cosi.resource.State/Get"), (e: grpc.ServiceError) => e.code === grpc.status.INVALID_ARGUMENT && /one-2-many/.test(e.details));
  await assert.rejects(version({ node: ["10.9.9.9"] }), (e: grpc.ServiceError) => e.code !== grpc.status.OK);
});
