// The floor under the apid figures of bench/rpc-latency.ts: one grpc-js unary round trip over mutual TLS on
// loopback, server and client in this process, no agent code (an echo of a Version-sized reply, Ed25519
// certificates as Talos issues them).
import * as grpc from "@grpc/grpc-js";
import { generateSelfSignedCA, issueCertificate, privateKeyToPkcs8Pem } from "../agent/src/pki/index.js";

const method = "/bench.Echo/Call";
const identity = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };

export interface BareEcho {
  call(): Promise<Buffer>;
  close(): void;
}

export async function startBareEcho(): Promise<BareEcho> {
  const ca = await generateSelfSignedCA({ organizations: ["bench"] });
  const server = await issueCertificate(ca, { ipAddresses: ["127.0.0.1"], extKeyUsage: ["serverAuth"], lifetimeMs: 3_600_000 });
  const client = await issueCertificate(ca, { organizations: ["os:admin"], extKeyUsage: ["clientAuth"], lifetimeMs: 3_600_000 });
  const reply = Buffer.alloc(160, 1);
  const srv = new grpc.Server();
  const handler: grpc.handleUnaryCall<Buffer, Buffer> = (_call, cb) => cb(null, reply);
  srv.register(method, handler, identity.serialize, identity.deserialize, "unary");
  const creds = grpc.ServerCredentials.createSsl(Buffer.from(ca.certPem), [{ cert_chain: Buffer.from(server.certPem), private_key: Buffer.from(privateKeyToPkcs8Pem(server.key)) }], true);
  const port = await new Promise<number>((resolve, reject) => srv.bindAsync("127.0.0.1:0", creds, (err, p) => (err ? reject(err) : resolve(p))));
  const channel = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(ca.certPem), Buffer.from(privateKeyToPkcs8Pem(client.key)), Buffer.from(client.certPem)));
  const request = Buffer.alloc(0);
  return {
    call: () =>
      new Promise<Buffer>((resolve, reject) =>
        channel.makeUnaryRequest(method, identity.serialize, identity.deserialize, request, (err, res) => (err ? reject(err) : resolve(res!))),
      ),
    close: () => {
      channel.close();
      srv.forceShutdown();
    },
  };
}
