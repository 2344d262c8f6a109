// The client's TLS to a node addressed by IP: no IP as SNI name (Node's DEP0123),
// while the server certificate is still verified against the talosconfig CA and
// must carry the endpoint's IP.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { serviceDefinition } from "../../../agent/src/api/index.js";
import { NodeClient } from "../../../agent/src/client/client.js";
import { generateSelfSignedCA, issueCertificate, type CertificateAuthority } from "../../../agent/src/pki/index.js";
import { tlsKeyPem } from "../../../agent/src/pki/tls.js";

let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
const servers: grpc.Server[] = [];
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
  otherCa = await generateSelfSignedCA({ organizations: ["talos"] });
  process.on("warning", onWarning);
});
after(() => {
  process.off("warning", onWarning);
  for (const s of servers) s.forceShutdown();
});

/** A node answering Version over TLS with a server certificate from `issuer` for `ips`. */
async function serveVersion(issuer: CertificateAuthority, ips: string[]): Promise<number> {
  const cert = await issueCertificate(issuer, {
    commonName: "node",
    ipAddresses: ips,
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  const server = new grpc.Server();
  servers.push(server);
  server.addService(serviceDefinition("machine.MachineService"), {
    Version: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { messages: [{ version: { tag: "v1.7.0" } }] }),
  });
  const creds = grpc.ServerCredentials.createSsl(
    null,
    [{ cert_chain: Buffer.from(cert.certPem), private_key: Buffer.from(tlsKeyPem(cert.keyPem)) }],
    false,
  );
  return new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", creds, (err, port) => (err ? reject(err) : resolve(port))),
  );
}

async function clientFor(port: number): Promise<NodeClient> {
  const leaf = await issueCertificate(ca, {
    organizations: ["os:admin"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3600_000,
  });
  return new NodeClient({
    endpoint: `127.0.0.1:${port}`,
    credentials: { kind: "mtls", ca: ca.certPem, crt: leaf.certPem, key: leaf.keyPem },
  });
}

async function versionOf(port: number): Promise<Record<string, unknown>> {
  const client = await clientFor(port);
  try {
    return await client.unary(client.machine, "Version", {}, 5000);
  } finally {
    client.close();
  }
}

test("an IP endpoint whose certificate names that IP is reached without Node's IP-as-ServerName warning", async () => {
  const port = await serveVersion(ca, ["127.0.0.1"]);
  const res = await versionOf(port);
  assert.equal((res["messages"] as { version: { tag: string } }[])[0]?.version.tag, "v1.7.0");
  await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on a later tick
  assert.deepEqual(
    warnings.filter((w) => /DEP0123|ServerName to an IP/.test(`${(w as { code?: string }).code} ${w.message}`)),
    [],
  );
});

test("a server certificate from another CA is refused", async () => {
  const port = await serveVersion(otherCa, ["127.0.0.1"]);
  await assert.rejects(versionOf(port), (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE);
});

test("a server certificate from the right CA that does not name the endpoint's IP is refused", async () => {
  const port = await serveVersion(ca, ["10.5.0.2"]);
  await assert.rejects(
    versionOf(port),
    (err: grpc.ServiceError) =>
      err.code === grpc.status.UNAVAILABLE && /IP: 127\.0\.0\.1 is not in the cert's list|altnames/i.test(err.details),
  );
});
