// apid's listener relaying calls as HTTP/2 frames (front-listener.ts, raw-relay.ts): what the caller gets back
// must be what machined sent (headers, trailers, statuses, large messages), deadlines and
// cancellation must reach machined; unary calls naming nodes are sent to machined and to the other
// nodes' apid (a fake on a unix socket) and merged; streams go to the proxy instead.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { ApiFront, type FrontOptions } from "../../../agent/src/apid/front-listener.js";
import { failedNode } from "../../../agent/src/apid/director.js";
import { failedNodeReply, tagUnaryReply } from "../../../agent/src/grpc/aggregate.js";
import { BackendSession } from "../../../agent/src/apid/backend-session.js";
import { setLogSink } from "../../../agent/src/log.js";
import { generateSelfSignedCA, issueCertificate, type CertificateAuthority } from "../../../agent/src/pki/index.js";

const identity = (b: Buffer) => b;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-apid-front-"));
const machinedSocket = path.join(dir, "machined.sock");
const proxySocket = path.join(dir, "proxy.sock");
const remoteSocket = path.join(dir, "remote-apid.sock");
const version = "/machine.MachineService/Version";
const rollback = "/machine.MachineService/Rollback";
const hostname = "/machine.MachineService/Hostname";
const read = "/machine.MachineService/Read";

let ca: CertificateAuthority;
let front: ApiFront;
/** The listener's options; one test lengthens the per-node deadline in place (the listener reads it per call). */
let frontOptions: FrontOptions;
// As machined serves: messages up to 32 MiB.
const machined = new grpc.Server({
  "grpc.max_receive_message_length": 32 * 1024 * 1024,
  "grpc.max_send_message_length": 32 * 1024 * 1024,
});
const proxy = new grpc.Server();
// Another node's apid: Version answers with what it got; Hostname never answers.
const remoteApid = new grpc.Server();
const remoteSessions = new Map<string, BackendSession>();
let remoteSeen: grpc.Metadata | undefined;
/** What the other node's Hostname handler saw of the last call cancelled under it. */
let cancelledAtRemote: Promise<void> = Promise.resolve();
/** `{ messages: [{ field 2: text }] }`: a reply with one messages element, as every node's reply holds. */
const oneMessage = (text: string) => {
  const t = Buffer.from(text);
  return Buffer.concat([Buffer.from([0x0a, t.length + 2, 0x12, t.length]), t]);
};
const sessions: BackendSession[] = [];
/** What machined's Hostname handler saw of the last call cancelled under it. */
let cancelledAtMachined: Promise<void> = Promise.resolve();
/** The deadline each fake's Hostname last saw (ms since the epoch, Infinity: none). */
const hostnameDeadlines = new Map<string, number>();
const deadlineMs = (call: grpc.ServerUnaryCall<Buffer, Buffer>) => {
  const d = call.getDeadline();
  return d instanceof Date ? d.getTime() : d;
};
let lastRequestMetadata: grpc.Metadata | undefined;
/** Whether the listener holds a client certificate to forward with. */
let canForward = true;

const big = Buffer.alloc(5 * 1024 * 1024 + 7, 0);
for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
  // Version: echoes the request with header and trailer metadata; Rollback: fails with a status and trailer metadata.
  machined.register(
    version,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      lastRequestMetadata = call.metadata;
      const header = new grpc.Metadata();
      header.set("x-from-machined", "headers");
      call.sendMetadata(header);
      const trailer = new grpc.Metadata();
      trailer.set("x-trailer", "trailers");
      trailer.set("x-trailer-bin", Buffer.from([0, 1, 2, 255]));
      cb(null, call.request, trailer);
    },
    identity,
    identity,
    "unary",
  );
  machined.register(
    rollback,
    (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const md = new grpc.Metadata();
      md.set("x-why", "no previous slot");
      cb({ code: grpc.status.FAILED_PRECONDITION, details: "rollback: no previous slot ✗ 100%", metadata: md });
    },
    identity,
    identity,
    "unary",
  );
  // Hostname never answers: the caller's deadline or cancellation must reach it.
  machined.register(
    hostname,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>) => {
      hostnameDeadlines.set("machined", deadlineMs(call));
      cancelledAtMachined = once(call, "cancelled").then(() => undefined);
    },
    identity,
    identity,
    "unary",
  );
  machined.register(
    read,
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      call.write(Buffer.from("machined-stream"));
      call.end();
    },
    identity,
    identity,
    "serverStream",
  );
  proxy.register(
    version,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb(null, Buffer.from(`proxy nodes=${call.metadata.get("nodes").join(",")}`)),
    identity,
    identity,
    "unary",
  );
  proxy.register(
    read,
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      call.write(Buffer.from("proxy-stream"));
      call.end();
    },
    identity,
    identity,
    "serverStream",
  );
  remoteApid.register(
    version,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      remoteSeen = call.metadata;
      cb(null, oneMessage(`remote got ${call.request.length} bytes`));
    },
    identity,
    identity,
    "unary",
  );
  remoteApid.register(
    rollback,
    (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb({ code: grpc.status.NOT_FOUND, details: "remote: nothing" }),
    identity,
    identity,
    "unary",
  );
  remoteApid.register(
    hostname,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>) => {
      hostnameDeadlines.set("remote", deadlineMs(call));
      cancelledAtRemote = once(call, "cancelled").then(() => undefined);
    },
    identity,
    identity,
    "unary",
  );
  for (const [server, socket] of [
    [machined, machinedSocket],
    [proxy, proxySocket],
    [remoteApid, remoteSocket],
  ] as const) {
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }
  const cert = await issueCertificate(ca, {
    commonName: "node",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  const session = (socket: string) => {
    const s = new BackendSession(path.basename(socket), () => net.connect(socket));
    sessions.push(s);
    return s;
  };
  const methods = [
    { path: version, requestStream: false, responseStream: false },
    { path: rollback, requestStream: false, responseStream: false },
    { path: hostname, requestStream: false, responseStream: false },
    { path: read, requestStream: false, responseStream: true },
  ];
  frontOptions = {
    listen: "127.0.0.1:0",
    mode: { kind: "maintenance", serverCert: cert.certPem, serverKey: cert.keyPem },
    methods,
    machined: session(machinedSocket),
    proxy: session(proxySocket),
    machinedTarget: `unix:${machinedSocket}`,
    isSelf: (t) => t === "self.node",
    // 10.5.0.2 is the fake apid; any other node has no one listening.
    remote: (t) => {
      if (!canForward) return undefined;
      const socket = t === "10.5.0.2" ? remoteSocket : path.join(dir, "nobody.sock");
      if (!remoteSessions.has(t)) remoteSessions.set(t, session(socket));
      return remoteSessions.get(t);
    },
    canForward: () => canForward,
  };
  front = new ApiFront(frontOptions);
  await front.listen();
});

after(async () => {
  await front.close(0);
  for (const s of sessions) s.close();
  machined.forceShutdown();
  proxy.forceShutdown();
  remoteApid.forceShutdown();
  fs.rmSync(dir, { recursive: true, force: true });
});

function client(): grpc.Client {
  return new grpc.Client(`127.0.0.1:${front.port()}`, grpc.credentials.createSsl(Buffer.from(ca.certPem)), {
    "grpc.max_receive_message_length": 32 * 1024 * 1024,
    "grpc.max_send_message_length": 32 * 1024 * 1024,
  });
}

interface Outcome {
  err?: grpc.ServiceError;
  reply?: Buffer;
  headers?: grpc.Metadata;
  status?: grpc.StatusObject;
}

function unary(
  method: string,
  request: Buffer,
  md = new grpc.Metadata(),
  options: grpc.CallOptions = {},
): Promise<Outcome> {
  const c = client();
  return new Promise((resolve) => {
    const out: Outcome = {};
    let pending = 2;
    const done = () => {
      if (--pending === 0) {
        c.close();
        resolve(out);
      }
    };
    const call = c.makeUnaryRequest(method, identity, identity, request, md, options, (err, reply) => {
      if (err) out.err = err;
      if (reply) out.reply = reply;
      done();
    });
    call.on("metadata", (h) => (out.headers = h));
    call.on("status", (st) => {
      out.status = st;
      done();
    });
  });
}

test("a unary call comes back with machined's reply, headers and trailers, byte for byte; the caller's roles are apid's", async () => {
  const md = new grpc.Metadata();
  md.set("talos-role", "os:admin");
  md.set("x-caller", "kept");
  const r = await unary(version, Buffer.from("hello"), md);
  assert.equal(r.err, undefined);
  assert.deepEqual(r.reply, Buffer.from("hello"));
  assert.deepEqual(r.headers?.get("x-from-machined"), ["headers"]);
  assert.deepEqual(r.status?.metadata.get("x-trailer"), ["trailers"]);
  assert.deepEqual(r.status?.metadata.get("x-trailer-bin"), [Buffer.from([0, 1, 2, 255])]);
  // Maintenance: every caller is a reader, whatever it claims; its other metadata goes on.
  assert.deepEqual(lastRequestMetadata?.get("talos-role"), ["os:reader"]);
  assert.deepEqual(lastRequestMetadata?.get("basalt-listener"), ["maintenance"]);
  assert.deepEqual(lastRequestMetadata?.get("x-caller"), ["kept"]);
});

test("machined's error status, message and trailers reach the caller unchanged", async () => {
  const r = await unary(rollback, Buffer.alloc(0));
  assert.equal(r.err?.code, grpc.status.FAILED_PRECONDITION);
  assert.equal(r.err?.details, "rollback: no previous slot ✗ 100%");
  assert.deepEqual(r.err?.metadata.get("x-why"), ["no previous slot"]);
});

test("a 5 MiB request and reply pass whole", async () => {
  const r = await unary(version, big);
  assert.equal(r.err, undefined);
  assert.equal(r.reply?.length, big.length);
  assert.ok(r.reply?.equals(big));
});

test("the caller's deadline reaches machined, which ends the call with DEADLINE_EXCEEDED", async () => {
  const r = await unary(hostname, Buffer.alloc(0), new grpc.Metadata(), { deadline: Date.now() + 300 });
  assert.equal(r.err?.code, grpc.status.DEADLINE_EXCEEDED);
  await cancelledAtMachined;
});

test("a caller that cancels cancels machined's call", async () => {
  const c = client();
  const outcome = new Promise<grpc.ServiceError | null>((resolve) => {
    const call = c.makeUnaryRequest(hostname, identity, identity, Buffer.alloc(0), (err) => resolve(err));
    setTimeout(() => call.cancel(), 200);
  });
  assert.equal((await outcome)?.code, grpc.status.CANCELLED);
  c.close();
  await cancelledAtMachined;
});

test("streams and compressed requests naming nodes go to the proxy; proxyfrom makes a unary call machined's", async () => {
  const nodes = new grpc.Metadata();
  nodes.set("nodes", "10.5.0.2");
  const gzip = new grpc.Client(`127.0.0.1:${front.port()}`, grpc.credentials.createSsl(Buffer.from(ca.certPem)), {
    "grpc.default_compression_algorithm": 2,
  });
  const compressed = await new Promise<Buffer | undefined>((resolve, reject) =>
    gzip.makeUnaryRequest(version, identity, identity, Buffer.alloc(64, 1), nodes, (err, reply) =>
      err ? reject(err) : resolve(reply),
    ),
  );
  gzip.close();
  assert.equal(compressed?.toString(), "proxy nodes=10.5.0.2");
  const proxied = new grpc.Metadata();
  proxied.set("nodes", "10.5.0.2");
  proxied.set("proxyfrom", "10.5.0.1");
  assert.equal((await unary(version, Buffer.from("local"), proxied)).reply?.toString(), "local");
  const c = client();
  const messages: string[] = [];
  const stream = c.makeServerStreamRequest(read, identity, identity, Buffer.alloc(0));
  stream.on("data", (b: Buffer) => messages.push(b.toString()));
  await once(stream, "end");
  c.close();
  assert.deepEqual(messages, ["proxy-stream"]);
});

test("nodes naming this node alone: machined answers, its reply tagged as the proxy tags it (a failure an error entry); untagged without a client certificate", async () => {
  // { messages: [{ field 2: "hi" }] }, as machined's replies hold one messages element.
  const reply = Buffer.from([0x0a, 0x04, 0x12, 0x02, 0x68, 0x69]);
  const self = new grpc.Metadata();
  self.set("nodes", "self.node");
  const ok = await unary(version, reply, self);
  assert.equal(ok.err, undefined);
  assert.deepEqual(ok.reply, tagUnaryReply(reply, "self.node"));
  assert.equal(lastRequestMetadata?.get("nodes").length, 0);
  const failed = await unary(rollback, Buffer.alloc(0), self);
  assert.equal(failed.err, undefined);
  assert.deepEqual(
    failed.reply,
    failedNodeReply(
      failedNode("self.node", { code: grpc.status.FAILED_PRECONDITION, details: "rollback: no previous slot ✗ 100%" }),
    ),
  );
  // A reply that cannot be tagged fails the call instead of apid.
  const untaggable = await unary(version, Buffer.from("not a reply"), self);
  assert.equal(untaggable.err?.code, grpc.status.INTERNAL);
  canForward = false;
  try {
    assert.deepEqual((await unary(version, reply, self)).reply, reply);
  } finally {
    canForward = true;
  }
});

test("a path the API does not have is the proxy's to answer (UNIMPLEMENTED)", async () => {
  const r = await unary("/machine.MachineService/NoSuchMethod", Buffer.alloc(0));
  assert.equal(r.err?.code, grpc.status.UNIMPLEMENTED);
});

test("nodes naming this node and another: the request read once and sent to both, the replies tagged and merged in the nodes' order", async () => {
  const md = new grpc.Metadata();
  md.set("nodes", "10.5.0.2,self.node");
  md.set("x-caller", "kept");
  md.set("talos-role", "os:admin");
  const request = oneMessage("hi");
  const r = await unary(version, request, md);
  assert.equal(r.err, undefined);
  assert.deepEqual(
    r.reply,
    Buffer.concat([
      tagUnaryReply(oneMessage(`remote got ${request.length} bytes`), "10.5.0.2"),
      tagUnaryReply(request, "self.node"),
    ]),
  );
  // machined: no routing keys left, the listener's roles; the other node: the roles, proxyfrom the authority the caller addressed.
  assert.deepEqual(lastRequestMetadata?.get("nodes"), []);
  assert.deepEqual(lastRequestMetadata?.get("talos-role"), ["os:reader"]);
  assert.deepEqual(remoteSeen?.get("nodes"), []);
  assert.deepEqual(remoteSeen?.get("talos-role"), ["os:reader"]);
  assert.deepEqual(remoteSeen?.get("proxyfrom"), [`127.0.0.1:${front.port()}`]);
  assert.deepEqual(remoteSeen?.get("x-caller"), ["kept"]);
  assert.deepEqual(remoteSeen?.get("basalt-listener"), []);
});

test("a node that fails or cannot be reached is an error entry worded as Talos's apid words it; the others answer", async () => {
  const md = new grpc.Metadata();
  md.set("nodes", "self.node,10.5.0.2");
  const failed = await unary(rollback, Buffer.alloc(5), md);
  assert.equal(failed.err, undefined);
  assert.deepEqual(
    failed.reply,
    Buffer.concat([
      failedNodeReply({
        hostname: "self.node",
        error: "rpc error: code = FailedPrecondition desc = rollback: no previous slot ✗ 100%",
        status: { code: grpc.status.FAILED_PRECONDITION, message: "rollback: no previous slot ✗ 100%" },
      }),
      failedNodeReply({
        hostname: "10.5.0.2",
        error: "rpc error: code = NotFound desc = remote: nothing",
        status: { code: grpc.status.NOT_FOUND, message: "remote: nothing" },
      }),
    ]),
  );
  const down = new grpc.Metadata();
  down.set("nodes", "10.5.0.9,self.node");
  const r = await unary(version, oneMessage("x"), down);
  assert.equal(r.err, undefined);
  const [first, second] = splitMessages(r.reply!);
  assert.match(first!.toString("latin1"), /10\.5\.0\.9.*rpc error: code = Unavailable desc = /s);
  assert.deepEqual(second, tagUnaryReply(oneMessage("x"), "self.node").subarray(2));
});

test("apid logs one line per call with the status it answered, as Talos's apid does", async () => {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  try {
    assert.equal((await unary(version, oneMessage("x"))).err, undefined);
    assert.equal((await unary(rollback, Buffer.alloc(5))).err?.code, grpc.status.FAILED_PRECONDITION);
    // Logged when the stream closes, which may follow the caller's reply by a turn.
    while (lines.filter((l) => l.includes('"component":"apid"') && l.includes("MachineService")).length < 2)
      await new Promise((r) => setTimeout(r, 10));
  } finally {
    setLogSink(previous);
  }
  const calls = lines
    .map((l) => JSON.parse(l) as Record<string, string>)
    .filter((r) => r["component"] === "apid" && r["method"]);
  assert.deepEqual(
    calls.map((r) => [r["method"], r["code"], r["kind"]]),
    [
      [version, "OK", "stream"],
      [rollback, "FailedPrecondition", "stream"],
    ],
  );
  assert.match(
    calls[1]!["msg"]!,
    /^FailedPrecondition \[\/machine\.MachineService\/Rollback\] \S+ stream rpc error: code = FailedPrecondition desc = rollback: no previous slot ✗ 100% \(:authority=/,
  );
});

test("each node of a fan-out gets the caller's deadline and no shorter one of apid's", async () => {
  const md = new grpc.Metadata();
  md.set("nodes", "self.node,10.5.0.2");
  // Longer than any bound apid could add (Talos's apid adds none), short enough for the test.
  const deadline = Date.now() + 20_000;
  const c = client();
  const call = c.makeUnaryRequest(hostname, identity, identity, Buffer.alloc(5), md, { deadline }, () => {});
  hostnameDeadlines.clear();
  while (hostnameDeadlines.size < 2) await new Promise((r) => setTimeout(r, 20));
  call.cancel();
  c.close();
  // grpc-timeout travels in whole milliseconds from when each hop sent it: within a second of the caller's.
  for (const [who, seen] of hostnameDeadlines)
    assert.ok(Math.abs(seen - deadline) < 1000, `${who} saw ${seen - deadline} ms off the caller's deadline`);
});

test("a caller that cancels a fan-out cancels every node's call", { timeout: 10_000 }, async () => {
  const md = new grpc.Metadata();
  md.set("nodes", "self.node,10.5.0.2");
  const before = [cancelledAtMachined, cancelledAtRemote];
  const c = client();
  const call = c.makeUnaryRequest(hostname, identity, identity, Buffer.alloc(5), md, () => {});
  // Cancelled once both nodes hold the call.
  while (cancelledAtMachined === before[0] || cancelledAtRemote === before[1])
    await new Promise((r) => setTimeout(r, 20));
  const outcome = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  call.cancel();
  assert.equal((await outcome).code, grpc.status.CANCELLED);
  c.close();
  await Promise.all([cancelledAtMachined, cancelledAtRemote]);
});

test("node naming another node: forwarded untagged, its failure the call's status", async () => {
  const md = new grpc.Metadata();
  md.set("node", "10.5.0.2");
  assert.deepEqual(
    (await unary(version, oneMessage("abc"), md)).reply,
    oneMessage(`remote got ${oneMessage("abc").length} bytes`),
  );
  assert.deepEqual(remoteSeen?.get("node"), []);
  const failed = await unary(rollback, Buffer.alloc(5), md);
  assert.equal(failed.err?.code, grpc.status.NOT_FOUND);
  assert.equal(failed.err?.details, "remote: nothing");
});

test("refused as the proxy refuses: node with two values, other nodes without a client certificate", async () => {
  const many = new grpc.Metadata();
  many.set("node", "10.5.0.2");
  many.add("node", "10.5.0.3");
  const twice = await unary(version, Buffer.alloc(5), many);
  assert.equal(twice.err?.code, grpc.status.INVALID_ARGUMENT);
  canForward = false;
  try {
    const md = new grpc.Metadata();
    md.set("nodes", "10.5.0.2");
    const r = await unary(version, Buffer.alloc(5), md);
    assert.equal(r.err?.code, grpc.status.PERMISSION_DENIED);
    assert.equal(r.err?.details, "no request forwarding");
  } finally {
    canForward = true;
  }
});

// Last: it replaces machined.
test("machined unreachable: UNAVAILABLE, and served again once it is back", async () => {
  machined.forceShutdown();
  const down = await unary(version, Buffer.from("x"));
  assert.equal(down.err?.code, grpc.status.UNAVAILABLE);
  const again = new grpc.Server();
  again.register(
    version,
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request),
    identity,
    identity,
    "unary",
  );
  fs.rmSync(machinedSocket, { force: true });
  await new Promise<void>((resolve, reject) =>
    again.bindAsync(`unix:${machinedSocket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  try {
    assert.deepEqual((await unary(version, Buffer.from("back"))).reply, Buffer.from("back"));
  } finally {
    again.forceShutdown();
  }
});

/** The messages elements of a merged reply (field 1, each with its tag and length stripped). */
function splitMessages(reply: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < reply.length; ) {
    assert.equal(reply[i], 0x0a);
    let len = 0;
    let shift = 0;
    let j = i + 1;
    for (;;) {
      const b = reply[j++]!;
      len |= (b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    out.push(reply.subarray(j, j + len));
    i = j + len;
  }
  return out;
}
