import assert from "node:assert/strict";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import * as tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import {
  clientCertLifetimeMs,
  generateSelfSignedCA,
  issueCertificate,
  serverCertLifetimeMs,
  tlsKeyPem,
  type CertificateAuthority,
  type CertificateAndKey,
} from "../../../agent/src/pki/index.js";

async function material(): Promise<{ ca: CertificateAuthority; server: CertificateAndKey; client: CertificateAndKey }> {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const server = await issueCertificate(ca, {
    commonName: "node-1",
    dnsNames: ["node-1"],
    ipAddresses: ["127.0.0.1", "::1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: serverCertLifetimeMs,
  });
  const client = await issueCertificate(ca, {
    organizations: ["os:admin"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: clientCertLifetimeMs,
  });
  return { ca, server, client };
}

test("tlsKeyPem relabels only Ed25519 PKCS#8 keys", () => {
  const ed = "-----BEGIN ED25519 PRIVATE KEY-----\nAAAA\n-----END ED25519 PRIVATE KEY-----\n";
  assert.equal(tlsKeyPem(ed), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
  const ec = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
  assert.equal(tlsKeyPem(ec), ec);
});

test("mutual TLS on loopback with Ed25519 server and client certificates (O=os:admin)", async (t) => {
  const { ca, server, client } = await material();
  const peerOrgs: unknown[] = [];
  const srv = tls.createServer(
    {
      cert: server.certPem,
      key: tlsKeyPem(server.keyPem),
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket) => {
      peerOrgs.push(socket.getPeerCertificate().subject?.O);
      socket.end("hello");
    },
  );
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  t.after(() => srv.close());
  const { port } = srv.address() as AddressInfo;

  const socket = tls.connect({
    host: "127.0.0.1",
    port,
    ca: ca.certPem,
    cert: client.certPem,
    key: tlsKeyPem(client.keyPem),
  });
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  await once(socket, "end");
  assert.equal(Buffer.concat(chunks).toString(), "hello");
  assert.equal(socket.authorized, true);
  assert.equal(socket.getPeerCertificate().subject?.CN, "node-1");
  socket.destroy();
  assert.deepEqual(peerOrgs, ["os:admin"]);
});

test("a client certificate from another CA is refused", async (t) => {
  const { ca, server } = await material();
  const other = await material();
  const srv = tls.createServer(
    {
      cert: server.certPem,
      key: tlsKeyPem(server.keyPem),
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket) => socket.end("should not happen"),
  );
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  t.after(() => srv.close());
  const { port } = srv.address() as AddressInfo;
  const socket = tls.connect({
    host: "127.0.0.1",
    port,
    ca: ca.certPem,
    cert: other.client.certPem,
    key: tlsKeyPem(other.client.keyPem),
  });
  const received: Buffer[] = [];
  socket.on("data", (c: Buffer) => received.push(c));
  // TLS 1.3: the client may finish its handshake before the server rejects its certificate;
  // either way no application data arrives and the connection fails.
  const [outcome] = await Promise.race([
    once(socket, "error").then(() => ["error"]),
    once(socket, "close").then(() => ["close"]),
  ]);
  assert.ok(outcome === "error" || outcome === "close");
  assert.equal(Buffer.concat(received).toString(), "");
  socket.destroy();
});

test("grpc-js createSsl accepts the generated material (mTLS unary call)", async (t) => {
  const { ca, server, client } = await material();
  const identity = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
  const service: grpc.ServiceDefinition = {
    Ping: {
      path: "/basalt.test.Echo/Ping",
      requestStream: false,
      responseStream: false,
      requestSerialize: identity.serialize,
      requestDeserialize: identity.deserialize,
      responseSerialize: identity.serialize,
      responseDeserialize: identity.deserialize,
    },
  };
  const srv = new grpc.Server();
  srv.addService(service, {
    Ping: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const subject = call.getAuthContext()?.sslPeerCertificate?.subject as { O?: string } | undefined;
      callback(null, Buffer.from(`${call.request.toString()}:${subject?.O ?? "none"}`));
    },
  });
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(ca.certPem),
    [{ cert_chain: Buffer.from(server.certPem), private_key: Buffer.from(tlsKeyPem(server.keyPem)) }],
    true,
  );
  const port = await new Promise<number>((resolve, reject) =>
    srv.bindAsync("127.0.0.1:0", creds, (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.after(() => srv.forceShutdown());

  const Client = grpc.makeGenericClientConstructor(service, "Echo");
  const clientCreds = grpc.credentials.createSsl(
    Buffer.from(ca.certPem),
    Buffer.from(tlsKeyPem(client.keyPem)),
    Buffer.from(client.certPem),
  );
  const stub = new Client(`127.0.0.1:${port}`, clientCreds) as unknown as grpc.Client & {
    Ping(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  };
  t.after(() => stub.close());
  const reply = await new Promise<Buffer>((resolve, reject) =>
    stub.Ping(Buffer.from("ping"), (err, res) => (err ? reject(err) : resolve(res!))),
  );
  assert.equal(reply.toString(), "ping:os:admin");
});
