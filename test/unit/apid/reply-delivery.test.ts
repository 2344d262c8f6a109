// The reply-delivery handshake (Talos #8566) across apid's real relay: a fake machined
// on a unix socket holds the network with machined's ReplyDeliveries, and the hold must
// last until its ApplyConfiguration reply has gone out through apid, then end without
// waiting for its bound.

import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { after, before, test } from "node:test";
import { allMethods } from "../../../agent/src/api/index.js";
import { buildProxyServer } from "../../../agent/src/apid/proxy-server.js";
import { NetworkChangeHold } from "../../../agent/src/controllers/network/change-hold.js";
import { replyDeliveryKey } from "../../../agent/src/grpc/reply-delivery.js";
import { ReplyDeliveries } from "../../../agent/src/machined/reply-delivery.js";
import { BackendSession } from "../../../agent/src/apid/backend-session.js";

const identity = (b: Buffer) => b;
const APPLY = "/machine.MachineService/ApplyConfiguration";
const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-reply-delivery-"));
const socket = path.join(dir, "machine.sock");
const hold = new NetworkChangeHold();
// A bound no run of this test reaches: the hold must end by apid's report.
const deliveries = new ReplyDeliveries(hold, 120_000);
const events: string[] = [];
let tokens: string[] = [];
let answer: (() => void) | undefined;
let received: () => void = () => {};
let machined: grpc.Server;
let proxy: grpc.Server;
let local: grpc.Client;
let machinedSession: BackendSession;
let port = 0;

before(async () => {
  machined = new grpc.Server();
  machined.register(
    APPLY,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      tokens = call.metadata.get(replyDeliveryKey).map(String);
      deliveries.expect(call.metadata);
      answer = () => {
        events.push("machined replied");
        cb(null, Buffer.from("ok"));
      };
      received();
    },
    identity,
    identity,
    "unary",
  );
  deliveries.register(machined);
  await new Promise<number>((resolve, reject) =>
    machined.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  local = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
  machinedSession = new BackendSession("machined", () => net.connect(socket));
  proxy = buildProxyServer({
    methods: allMethods().filter((m) => m.path === APPLY),
    backends: { local: machinedSession, canForward: false, remote: () => undefined },
    authenticate: () => ({ roles: ["os:admin"] }),
    isSelf: () => true,
    machinedTarget: `unix:${socket}`,
  });
  port = await new Promise<number>((resolve, reject) =>
    proxy.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
});

after(() => {
  proxy.forceShutdown();
  machined.forceShutdown();
  local.close();
  machinedSession.close();
  rmSync(dir, { recursive: true, force: true });
});

test("an apply through apid holds the network until its reply has left apid, and no longer", async () => {
  const caller = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set(replyDeliveryKey, "forged-by-the-caller");
  const arrived = new Promise<void>((resolve) => (received = resolve));
  const reply = new Promise<Buffer>((resolve, reject) =>
    caller.makeUnaryRequest(APPLY, identity, identity, Buffer.from("config"), md, {}, (err, res) =>
      err ? reject(err) : resolve(res!),
    ),
  );
  await arrived;
  const released = hold.released().then(() => events.push("network released"));
  // apid's own token replaced the caller's.
  assert.equal(tokens.length, 1);
  assert.match(tokens[0]!, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  // Held while machined has not answered (a round trip through both servers changes nothing).
  await new Promise<Buffer>((resolve, reject) =>
    local.makeUnaryRequest(
      "/basalt.internal.ReplyDelivery/Delivered",
      identity,
      identity,
      Buffer.from("some-other-token"),
      (err, res) => (err ? reject(err) : resolve(res!)),
    ),
  );
  assert.deepEqual(events, []);
  answer!();
  assert.equal((await reply).toString(), "ok");
  await released;
  assert.deepEqual(events, ["machined replied", "network released"]);
  caller.close();
});

test("a call without apid's token (a caller on machined's socket) holds nothing", async () => {
  const before = events.length;
  deliveries.expect(new grpc.Metadata());
  await hold.released();
  assert.equal(events.length, before);
});
