// The floors under the apid figures of bench/rpc-latency.ts, with no agent code: a grpc-js unary round trip over
// mutual TLS on loopback (an echo of a Version-sized reply, Ed25519 certificates as Talos issues them), first with
// server and client in this process, then in the shape of the apid path: this process calls a relay process over
// mutual TLS, which calls an echo server process on a unix socket (apid -> machined), each hop a grpc-js call.
// The relay and the server are this file again, run with BENCH_BARE_ROLE.
import * as grpc from "@grpc/grpc-js";
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generateSelfSignedCA, issueCertificate, privateKeyToPkcs8Pem } from "../agent/src/pki/index.js";

const method = "/bench.Echo/Call";
const identity = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const reply = Buffer.alloc(160, 1);
const request = Buffer.alloc(0);

export interface BareEcho {
  call(): Promise<Buffer>;
  close(): void;
}

/** PEM material of one mutual-TLS pair: the CA, the server's certificate and key, the client's. */
interface Material {
  ca: string;
  serverCrt: string;
  serverKey: string;
  clientCrt: string;
  clientKey: string;
}

async function material(): Promise<Material> {
  const ca = await generateSelfSignedCA({ organizations: ["bench"] });
  const server = await issueCertificate(ca, {
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3_600_000,
  });
  const client = await issueCertificate(ca, {
    organizations: ["os:admin"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3_600_000,
  });
  return {
    ca: ca.certPem,
    serverCrt: server.certPem,
    serverKey: privateKeyToPkcs8Pem(server.key),
    clientCrt: client.certPem,
    clientKey: privateKeyToPkcs8Pem(client.key),
  };
}

const serverTls = (m: Material) =>
  grpc.ServerCredentials.createSsl(
    Buffer.from(m.ca),
    [{ cert_chain: Buffer.from(m.serverCrt), private_key: Buffer.from(m.serverKey) }],
    true,
  );
const clientTls = (m: Material) =>
  grpc.credentials.createSsl(Buffer.from(m.ca), Buffer.from(m.clientKey), Buffer.from(m.clientCrt));

function bind(srv: grpc.Server, address: string, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) =>
    srv.bindAsync(address, creds, (err, port) => (err ? reject(err) : resolve(port))),
  );
}

function echoServer(handler: grpc.handleUnaryCall<Buffer, Buffer>): grpc.Server {
  const srv = new grpc.Server();
  srv.register(method, handler, identity.serialize, identity.deserialize, "unary");
  return srv;
}

function caller(channel: grpc.Client): () => Promise<Buffer> {
  return () =>
    new Promise<Buffer>((resolve, reject) =>
      channel.makeUnaryRequest(method, identity.serialize, identity.deserialize, request, (err, res) =>
        err ? reject(err) : resolve(res!),
      ),
    );
}

/** Server and client in this process. */
export async function startBareEcho(): Promise<BareEcho> {
  const m = await material();
  const srv = echoServer((_call, cb) => cb(null, reply));
  const port = await bind(srv, "127.0.0.1:0", serverTls(m));
  const channel = new grpc.Client(`127.0.0.1:${port}`, clientTls(m));
  return {
    call: caller(channel),
    close: () => {
      channel.close();
      srv.forceShutdown();
    },
  };
}

/** This process -> a relay process (mutual TLS) -> an echo server process (unix socket), as a call goes through apid to machined. */
export async function startBareChain(): Promise<BareEcho> {
  const m = await material();
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-bench-bare-"));
  const socket = path.join(dir, "echo.sock");
  const children: ChildProcess[] = [];
  const start = async (role: string): Promise<number> => {
    const child = fork(fileURLToPath(import.meta.url), {
      env: { ...process.env, BENCH_BARE_ROLE: role, BENCH_BARE_SOCKET: socket, BENCH_BARE_MATERIAL: JSON.stringify(m) },
      stdio: "inherit",
    });
    children.push(child);
    return new Promise<number>((resolve, reject) => {
      child.once("message", (port) => resolve(Number(port)));
      child.once("exit", (code) => reject(new Error(`the bare ${role} exited (${code})`)));
    });
  };
  await start("server");
  const port = await start("relay");
  const channel = new grpc.Client(`127.0.0.1:${port}`, clientTls(m));
  return {
    call: caller(channel),
    close: () => {
      channel.close();
      for (const c of children) c.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function runRole(role: string): Promise<void> {
  const socket = process.env["BENCH_BARE_SOCKET"]!;
  if (role === "server") {
    await bind(
      echoServer((_call, cb) => cb(null, reply)),
      `unix:${socket}`,
      grpc.ServerCredentials.createInsecure(),
    );
    process.send!(0);
    return;
  }
  // startBareChain wrote it from a Material: JSON.parse cannot know the type.
  const m = JSON.parse(process.env["BENCH_BARE_MATERIAL"]!) as Material;
  const upstream = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
  const srv = echoServer((call, cb) =>
    upstream.makeUnaryRequest(method, identity.serialize, identity.deserialize, call.request, cb),
  );
  process.send!(await bind(srv, "127.0.0.1:0", serverTls(m)));
}

const role = process.env["BENCH_BARE_ROLE"];
if (role) await runRole(role);
