// apid's raw relay in front of fake backends (a fake machined on a unix socket,
// fake remote apids on TCP with mutual TLS, reached through apid's RemoteBackends):
// role injection, listener tag, the director's routing by node/nodes metadata,
// one-to-many aggregation, the caller's deadline on every leg, streams, the forwarding identity.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { allMethods, decode, encode } from "../../../agent/src/api/index.js";
import { RemoteBackends, type ForwardingIdentity } from "../../../agent/src/apid/remote-backends.js";
import { type Backends, type Caller } from "../../../agent/src/apid/director.js";
import { buildProxyServer } from "../../../agent/src/apid/proxy-server.js";
import { BackendClosedError, BackendSession } from "../../../agent/src/apid/backend-session.js";
import {
  generateSelfSignedCA,
  issueCertificate,
  tlsKeyPem,
  type CertificateAuthority,
} from "../../../agent/src/pki/index.js";

const identity = (b: Buffer) => b;
const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-proxy-"));
const socket = path.join(dir, "machine.sock");
const servers: grpc.Server[] = [];
let proxy: grpc.Server;
let port = 0;
let caller: Caller = { roles: ["os:reader"] };
let canForward = true;
const seen: { who: string; md: grpc.Metadata; peer?: string; deadline?: number }[] = [];
/** apid's sessions to the other nodes, with a forwarding identity issued from `ca`. */
const remotes = new RemoteBackends();
/** Where each other node's fake apid listens (127.0.0.1:port) by the name the tests give it. */
const addresses = new Map<string, string>();
let ca: CertificateAuthority;
// Accepts connections and never speaks TLS: a node that is there but does not answer.
const muted = new Set<net.Socket>();
const mute = net.createServer((s) => void muted.add(s));

async function forwardingIdentity(commonName: string): Promise<ForwardingIdentity> {
  const cert = await issueCertificate(ca, {
    commonName,
    organizations: ["os:impersonator"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3600_000,
  });
  return { crt: cert.certPem, key: cert.keyPem, acceptedCAs: [ca.certPem] };
}

/** A fake backend: Version answers with who it is and the roles/proxyfrom it got; Dmesg streams 3 chunks 30 ms apart. */
async function fakeBackend(
  who: string,
  address: string,
  opts: { silent?: boolean; creds?: grpc.ServerCredentials } = {},
): Promise<string> {
  const server = new grpc.Server();
  servers.push(server);
  server.register(
    "/machine.MachineService/Version",
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const d = call.getDeadline();
      seen.push({
        who,
        md: call.metadata,
        peer: String(call.getAuthContext().sslPeerCertificate?.subject.CN ?? ""),
        deadline: d instanceof Date ? d.getTime() : d,
      });
      if (opts.silent) return; // never answers: only the caller's deadline ends it
      const tag = `${who}|${call.metadata.get("talos-role").join(",")}|${call.metadata.get("proxyfrom").join(",")}`;
      cb(null, encode("machine.VersionResponse", { messages: [{ version: { tag } }] }));
    },
    identity,
    identity,
    "unary",
  );
  server.register(
    "/machine.MachineService/Dmesg",
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      let n = 0;
      const t = setInterval(() => {
        call.write(encode("common.Data", { bytes: Buffer.from(`${who}-${n}`) }));
        if (++n === 3) {
          clearInterval(t);
          call.end();
        }
      }, 30);
      call.on("cancelled", () => clearInterval(t));
    },
    identity,
    identity,
    "serverStream",
  );
  // A burst written at once, then the status: what a fast machined does with a slow caller.
  const burst =
    (count: number, fail?: grpc.StatusObject, size = 0) =>
    (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      for (let n = 0; n < count; n++)
        call.write(encode("common.Data", { bytes: Buffer.from(`${who}-${n}`.padEnd(size, ".")) }));
      if (fail) call.emit("error", fail);
      else call.end();
    };
  server.register("/machine.MachineService/Read", burst(3000), identity, identity, "serverStream");
  server.register(
    "/machine.MachineService/List",
    burst(300, { code: grpc.status.NOT_FOUND, details: "gone mid-way", metadata: new grpc.Metadata() }),
    identity,
    identity,
    "serverStream",
  );
  // 2.4 MB, more than HTTP/2's windows hold: apid must hold machined back while the caller is slow.
  server.register(
    "/machine.MachineService/Copy",
    burst(300, { code: grpc.status.NOT_FOUND, details: "gone mid-way", metadata: new grpc.Metadata() }, 8192),
    identity,
    identity,
    "serverStream",
  );
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, opts.creds ?? grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return address.startsWith("unix:") ? address : `127.0.0.1:${bound}`;
}

let local: BackendSession;

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
  // Other nodes' apid serve mutual TLS with a certificate naming the address they are reached at.
  const serverCert = await issueCertificate(ca, {
    commonName: "node",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(ca.certPem),
    [{ cert_chain: Buffer.from(serverCert.certPem), private_key: Buffer.from(tlsKeyPem(serverCert.keyPem)) }],
    true,
  );
  remotes.setIdentity(await forwardingIdentity("apid-1"));
  await fakeBackend("local", `unix:${socket}`);
  local = new BackendSession("machined", () => net.connect(socket));
  addresses.set("10.0.0.2", await fakeBackend("node2", "127.0.0.1:0", { creds }));
  addresses.set("10.0.0.3", await fakeBackend("node3", "127.0.0.1:0", { creds }));
  addresses.set("10.0.0.9", await fakeBackend("silent", "127.0.0.1:0", { silent: true, creds }));
  // Nothing listens there: the connection is refused.
  addresses.set("10.0.0.4", "127.0.0.1:1");
  await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
  addresses.set("10.0.0.5", `127.0.0.1:${(mute.address() as net.AddressInfo).port}`);
  const backends: Backends = {
    local,
    get canForward() {
      return canForward;
    },
    remote: (t) => (canForward ? remotes.session(addresses.get(t.replace(/:\d+$/, "")) ?? t) : undefined),
  };
  proxy = buildProxyServer({
    methods: allMethods().map((m) => ({
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
    })),
    backends,
    authenticate: () => caller,
    // It would take a target with a port too: the director must not ask it about one.
    isSelf: (t) => ["127.0.0.1", "127.0.0.1:50000", "self"].includes(t),
    connectTimeoutMs: 500,
    maxConcurrentTargets: 2,
  });
  servers.push(proxy);
  port = await new Promise((resolve, reject) =>
    proxy.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
});

after(() => {
  local.close();
  remotes.close();
  mute.close();
  for (const s of muted) s.destroy();
  for (const s of servers) s.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

interface VersionReply {
  messages: {
    metadata: { hostname: string; error: string; status: { code: number } | null } | null;
    version: { tag: string } | null;
  }[];
}

function metadataOf(md: Record<string, string[]>): grpc.Metadata {
  const meta = new grpc.Metadata();
  for (const [k, vs] of Object.entries(md)) for (const v of vs) meta.add(k, v);
  return meta;
}

function version(
  md: Record<string, string[]> = {},
  method = "/machine.MachineService/Version",
  deadline: grpc.Deadline = Infinity,
): Promise<VersionReply> {
  const c = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) =>
    c.makeUnaryRequest(method, identity, identity, Buffer.alloc(0), metadataOf(md), { deadline }, (err, res) => {
      c.close();
      if (err) reject(err);
      else resolve(decode("machine.VersionResponse", res!) as never);
    }),
  );
}

function dmesg(
  md: Record<string, string[]>,
): Promise<{ metadata: { hostname: string; error: string } | null; bytes: Buffer }[]> {
  const c = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const out: { metadata: { hostname: string; error: string } | null; bytes: Buffer }[] = [];
    const s = c.makeServerStreamRequest(
      "/machine.MachineService/Dmesg",
      identity,
      identity,
      Buffer.alloc(0),
      metadataOf(md),
    );
    s.on("data", (b: Buffer) => out.push(decode("common.Data", b) as never));
    s.on("error", (e) => (c.close(), reject(e)));
    s.on("end", () => (c.close(), resolve(out)));
  });
}

test("relays bytes to machined with the caller's roles; client-sent roles and listener tags are dropped", async () => {
  canForward = true;
  caller = { roles: ["os:reader"] };
  const r = await version({ "talos-role": ["os:admin"], "basalt-listener": ["maintenance"] });
  assert.equal(r.messages[0]!.version!.tag, "local|os:reader|");
  assert.equal(r.messages[0]!.metadata, null, "one-to-one replies are not tagged");
  assert.deepEqual(seen.at(-1)!.md.get("basalt-listener"), []);
  caller = { roles: ["os:reader"], maintenance: true };
  await version();
  assert.deepEqual(seen.at(-1)!.md.get("basalt-listener"), ["maintenance"]);
});

test("node naming this node (by name or IP) is served locally; another node one-to-one with proxyfrom and the caller's roles", async () => {
  caller = { roles: ["os:operator"] };
  for (const self of ["self", "127.0.0.1"]) {
    const r = await version({ node: [self] });
    assert.equal(r.messages[0]!.version!.tag, "local|os:operator|", self);
  }
  const r = await version({ node: ["10.0.0.2"] });
  assert.equal(r.messages.length, 1);
  assert.match(r.messages[0]!.version!.tag, /^node2\|os:operator\|.+/, "proxyfrom set, roles forwarded");
  assert.equal(r.messages[0]!.metadata, null, "one-to-one: nothing appended");
  const md = seen.at(-1)!.md;
  assert.deepEqual([md.get("node"), md.get("nodes")], [[], []], "routing keys are not forwarded");
});

test("nodes fans out: one message per target tagged with the target string, this node included", async () => {
  caller = { roles: ["os:admin"] };
  const r = await version({ nodes: ["127.0.0.1,10.0.0.2", "10.0.0.3"] });
  assert.deepEqual(
    r.messages.map((m) => m.metadata!.hostname),
    ["127.0.0.1", "10.0.0.2", "10.0.0.3"],
  );
  assert.deepEqual(
    r.messages.map((m) => m.version!.tag.split("|")[0]),
    ["local", "node2", "node3"],
  );
  assert.ok(r.messages.every((m) => m.version!.tag.split("|")[1] === "os:admin"));
});

test("a failed node is an error entry beside the others' answers", async () => {
  caller = { roles: ["os:admin"] };
  const r = await version({ nodes: ["10.0.0.2", "10.0.0.4", "10.0.0.3"] });
  assert.deepEqual(
    r.messages.map((m) => m.metadata!.hostname),
    ["10.0.0.2", "10.0.0.4", "10.0.0.3"],
  );
  assert.equal(r.messages[0]!.version!.tag.split("|")[0], "node2");
  assert.equal(r.messages[2]!.version!.tag.split("|")[0], "node3");
  assert.equal(r.messages[1]!.metadata!.status!.code, grpc.status.UNAVAILABLE);
  assert.ok(r.messages[1]!.metadata!.error.length > 0);
});

test("a silent node holds a fan-out until the caller's own deadline, which every leg carries", async () => {
  caller = { roles: ["os:admin"] };
  const deadline = Date.now() + 1500;
  await assert.rejects(
    version({ nodes: ["10.0.0.2", "10.0.0.9"] }, undefined, deadline),
    (err: grpc.ServiceError) => err.code === grpc.status.DEADLINE_EXCEEDED,
  );
  const legs = seen.slice(-2);
  assert.deepEqual(legs.map((l) => l.who).sort(), ["node2", "silent"]);
  for (const s of legs)
    assert.ok(
      Math.abs(s.deadline! - deadline) < 1000,
      `${s.who} saw ${s.deadline! - deadline} ms off the caller's deadline`,
    );
});

test("streamed replies of a fan-out are interleaved and tagged; a failed node is one error message", async () => {
  caller = { roles: ["os:reader"] };
  const msgs = await dmesg({ nodes: ["10.0.0.2", "10.0.0.3", "10.0.0.4"] });
  const data = msgs.filter((m) => !m.metadata?.error);
  assert.equal(data.length, 6);
  for (const m of data)
    assert.equal(m.bytes.toString().startsWith("node2") ? "10.0.0.2" : "10.0.0.3", m.metadata!.hostname);
  const order = data.map((m) => m.metadata!.hostname);
  // Interleaved as they arrive, not one node's stream after the other's.
  assert.notDeepEqual(order, [...order].sort());
  const failed = msgs.filter((m) => m.metadata?.error);
  assert.deepEqual(
    failed.map((m) => m.metadata!.hostname),
    ["10.0.0.4"],
  );
});

test("a target naming a port is refused as Talos's apid refuses it (Internal, before any leg), where it can forward", async () => {
  caller = { roles: ["os:admin"] };
  const cases: Record<string, string[]>[] = [
    { nodes: ["10.0.0.2", "10.0.0.3:50000"] },
    { node: ["10.0.0.3:50000"] },
    { nodes: ["[fd00::3]:50000"] },
    { node: ["127.0.0.1:50000"] },
  ];
  for (const md of cases) {
    const target = (md["nodes"] ?? md["node"])!.at(-1)!;
    await assert.rejects(
      version(md),
      (e: grpc.ServiceError) => e.code === grpc.status.INTERNAL && e.details === `invalid target "${target}"`,
      JSON.stringify(md),
    );
  }
  // Without forwarding Talos compares a target with this node's names as it is: with a port it is another node.
  canForward = false;
  try {
    const elsewhere: Record<string, string[]>[] = [
      { nodes: ["10.0.0.3:50000"] },
      { nodes: ["127.0.0.1:50000"] },
      { node: ["127.0.0.1:50000"] },
    ];
    for (const md of elsewhere) {
      await assert.rejects(
        version(md),
        (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "no request forwarding",
        JSON.stringify(md),
      );
    }
  } finally {
    canForward = true;
  }
});

test("without a client certificate: only this node may be named; forwarding is refused as Talos refuses it", async () => {
  canForward = false;
  try {
    caller = { roles: ["os:admin"] };
    const r = await version({ nodes: ["self"] });
    assert.equal(r.messages[0]!.metadata, null, "a sole self target is served as if no target was named");
    await assert.rejects(
      version({ nodes: ["10.0.0.2"] }),
      (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "no request forwarding",
    );
    await assert.rejects(
      version({ node: ["10.0.0.2"] }),
      (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "no request forwarding",
    );
  } finally {
    canForward = true;
  }
});

/**
 * Reads a server stream through the proxy as HTTP/2 frames, pausing 2 ms after every 50 messages; the messages
 * and the final status. Not through grpc-js's client: once an error status has come it drops the messages it
 * has not handed to a paused reader yet (grpc/grpc-node#2764), which would hide what apid passed on.
 */
function slowStream(
  method: string,
  md: Record<string, string[]> = {},
): Promise<{ bytes: string[]; status: { code: number; details: string } }> {
  // The proxy is plaintext here: apid's listener (TLS) relays streams to it as frames.
  const session = http2.connect(`http://127.0.0.1:${port}`);
  return new Promise((resolve, reject) => {
    const bytes: string[] = [];
    const s = session.request({
      ...metadataOf(md).toHttp2Headers(),
      ":method": "POST",
      ":path": method,
      "content-type": "application/grpc",
      te: "trailers",
    });
    s.end(Buffer.alloc(5));
    let pending: Buffer = Buffer.alloc(0);
    let status: { code: number; details: string } | undefined;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined)
        status = { code: Number(h["grpc-status"]), details: decodeURIComponent(String(h["grpc-message"] ?? "")) };
    };
    s.on("response", take);
    s.on("trailers", take);
    s.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
        const m = decode("common.Data", pending.subarray(5, 5 + pending.readUInt32BE(1))) as {
          bytes: Buffer;
          metadata: { hostname: string; error: string; status: { code: number } | null } | null;
        };
        pending = pending.subarray(5 + pending.readUInt32BE(1));
        // A failed node's entry: its hostname, status code and error text.
        if (m.metadata?.error) bytes.push(`${m.metadata.hostname}!${m.metadata.status?.code}!${m.metadata.error}`);
        else bytes.push(`${m.metadata?.hostname ?? ""}:${m.bytes.toString()}`);
        if (bytes.length % 50 === 0) {
          s.pause();
          setTimeout(() => s.resume(), 2);
        }
      }
    });
    s.on("error", reject);
    session.on("error", reject);
    s.on("end", () => {
      session.close();
      if (!status) return reject(new Error("the stream ended without a status"));
      resolve({ bytes, status });
    });
  });
}

test("a burst of messages reaches a slow caller whole, in order, then the backend's status (one-to-one and fanned out)", async () => {
  const local = Array.from({ length: 3000 }, (_, n) => `:local-${n}`);
  for (let i = 0; i < 3; i++) {
    const one = await slowStream("/machine.MachineService/Read");
    assert.equal(one.status.code, grpc.status.OK);
    assert.deepEqual(one.bytes, local);
  }
  const failing = await slowStream("/machine.MachineService/List");
  assert.deepEqual([failing.status.code, failing.status.details], [grpc.status.NOT_FOUND, "gone mid-way"]);
  assert.deepEqual(failing.bytes, local.slice(0, 300), "every message sent before the failure");
  const large = await slowStream("/machine.MachineService/Copy");
  assert.deepEqual([large.status.code, large.status.details], [grpc.status.NOT_FOUND, "gone mid-way"]);
  assert.deepEqual(
    large.bytes,
    local.slice(0, 300).map((b) => b.padEnd(8193, ".")),
    "every large message sent before the failure",
  );

  const fanned = await slowStream("/machine.MachineService/Read", { nodes: ["self", "10.0.0.2"] });
  assert.equal(fanned.status.code, grpc.status.OK);
  for (const [tag, who] of [
    ["self", "local"],
    ["10.0.0.2", "node2"],
  ]) {
    assert.deepEqual(
      fanned.bytes.filter((b) => b.startsWith(`${tag}:`)),
      Array.from({ length: 3000 }, (_, n) => `${tag}:${who}-${n}`),
      tag,
    );
  }
  assert.equal(fanned.bytes.length, 6000);
});

test("routing errors as Talos answers them", async () => {
  await assert.rejects(
    version({ node: ["a", "b"] }),
    (e: grpc.ServiceError) =>
      e.code === grpc.status.INVALID_ARGUMENT && e.details === "node metadata must be single-valued",
  );
  await assert.rejects(
    version({ nodes: ["self"] }, "/cosi.resource.State/Get"),
    (e: grpc.ServiceError) =>
      e.code === grpc.status.INVALID_ARGUMENT && e.details === "one-2-many proxying is not supported for COSI methods",
  );
});

test("proxyfrom makes the call local whatever node/nodes say", async () => {
  caller = { roles: ["os:reader"] };
  const r = await version({ proxyfrom: ["10.0.0.1"], nodes: ["10.0.0.2"] });
  assert.equal(r.messages[0]!.version!.tag, "local|os:reader|", "proxyfrom is consumed, not passed to machined");
});

const burstOf = (who: string, tag: string, count: number, size = 0) =>
  Array.from({ length: count }, (_, n) => `${tag}:${`${who}-${n}`.padEnd(size, ".")}`);

test("a burst that ends in an error reaches a slow caller whole from another node's apid over mutual TLS (one-to-one and fanned out)", async () => {
  caller = { roles: ["os:reader"] };
  const one = await slowStream("/machine.MachineService/List", { node: ["10.0.0.2"] });
  assert.deepEqual([one.status.code, one.status.details], [grpc.status.NOT_FOUND, "gone mid-way"]);
  assert.equal(one.bytes.length, 300, "messages");
  assert.deepEqual(one.bytes, burstOf("node2", "", 300), "every message node2 sent before the failure");
  const large = await slowStream("/machine.MachineService/Copy", { node: ["10.0.0.2"] });
  assert.deepEqual([large.status.code, large.status.details], [grpc.status.NOT_FOUND, "gone mid-way"]);
  assert.equal(large.bytes.length, 300, "large messages");
  assert.deepEqual(
    large.bytes,
    burstOf("node2", "", 300, 8192),
    "2.4 MB: every large message node2 sent before the failure",
  );

  const fanned = await slowStream("/machine.MachineService/Copy", { nodes: ["10.0.0.2", "self", "10.0.0.3"] });
  assert.equal(fanned.status.code, grpc.status.OK, "a failing node is an entry, not the call's status");
  for (const [tag, who] of [
    ["10.0.0.2", "node2"],
    ["self", "local"],
    ["10.0.0.3", "node3"],
  ] as const) {
    const share = fanned.bytes.filter((b) => b.startsWith(`${tag}:`) || b.startsWith(`${tag}!`));
    assert.equal(share.length, 301, `${tag}: 300 messages and the error entry`);
    assert.equal(
      share.at(-1),
      `${tag}!${grpc.status.NOT_FOUND}!rpc error: code = NotFound desc = gone mid-way`,
      `${tag}: the error entry last`,
    );
    assert.deepEqual(
      share,
      [
        ...burstOf(who, tag, 300, 8192),
        `${tag}!${grpc.status.NOT_FOUND}!rpc error: code = NotFound desc = gone mid-way`,
      ],
      tag,
    );
  }
  assert.equal(fanned.bytes.length, 903);
});

test("a dead node in a streamed fan-out fails its own leg with UNAVAILABLE; the others' output arrives whole", async () => {
  caller = { roles: ["os:reader"] };
  // 10.0.0.5 accepts TCP and never answers TLS (the per-target wait ends it); nothing listens at 10.0.0.4.
  const r = await slowStream("/machine.MachineService/Read", {
    nodes: ["10.0.0.2", "10.0.0.5", "10.0.0.4", "10.0.0.3"],
  });
  assert.equal(r.status.code, grpc.status.OK);
  assert.deepEqual(
    r.bytes.filter((b) => b.startsWith("10.0.0.2:")),
    burstOf("node2", "10.0.0.2", 3000),
  );
  assert.deepEqual(
    r.bytes.filter((b) => b.startsWith("10.0.0.3:")),
    burstOf("node3", "10.0.0.3", 3000),
  );
  const failed = r.bytes.filter((b) => b.includes("!"));
  assert.deepEqual(failed.map((b) => b.split("!").slice(0, 2)).sort(), [
    ["10.0.0.4", String(grpc.status.UNAVAILABLE)],
    ["10.0.0.5", String(grpc.status.UNAVAILABLE)],
  ]);
  assert.ok(
    failed.every((b) => b.includes("rpc error: code = Unavailable desc = connection to ")),
    failed.join("\n"),
  );
  assert.equal(r.bytes.length, 6002);
});

test("sessions to other nodes are reused; a new forwarding identity closes them and the next call connects with it", async () => {
  caller = { roles: ["os:reader"] };
  const address = addresses.get("10.0.0.2")!;
  const first = remotes.session(address)!;
  assert.equal(remotes.session(address), first, "one session per node, reused across calls");
  await version({ node: ["10.0.0.2"] });
  assert.equal(seen.at(-1)!.peer, "apid-1");
  const renewed = await forwardingIdentity("apid-2");
  remotes.setIdentity(renewed);
  assert.throws(() => first.request({ ":path": "/x" }), BackendClosedError, "the old session is closed for good");
  const second = remotes.session(address)!;
  assert.notEqual(second, first);
  await version({ node: ["10.0.0.2"] });
  assert.equal(seen.at(-1)!.peer, "apid-2", "the next call presented the new identity");
  remotes.setIdentity({ ...renewed, acceptedCAs: [...renewed.acceptedCAs] });
  assert.equal(remotes.session(address), second, "the same identity again keeps the sessions");
});
