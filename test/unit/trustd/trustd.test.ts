import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import net from "node:net";
import { test } from "node:test";
import { createCSR, generateSelfSignedCA, hourMs, issueCertificate } from "../../../agent/src/pki/index.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import {
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  TrustdCertificatesId,
  TrustdCertificatesType,
} from "../../../agent/src/resources/catalog/secrets.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { tcpProbe } from "../../../agent/src/services/readiness.js";
import { trustdService } from "../../../agent/src/services/definitions/trustd.js";
import { callTrustd } from "../../../agent/src/trustd/client.js";
import { runTrustd } from "../../../agent/src/trustd/trustd.js";

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

test("trustd in machined's process: serves from machined's store; a stop closes its listener, a start opens it again", async (t) => {
  const ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const server = await issueCertificate(ca, {
    commonName: "trustd",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 24 * hourMs,
  });
  const token = "abcdef.0123456789abcdef";
  const state = new ResourceState();
  registerCatalog(state);
  const owner = "secrets.test";
  state.modify(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId, owner, () => ({
    issuingCA: { crt: ca.certPem, key: ca.keyPem },
    acceptedCAs: [{ crt: ca.certPem }],
    certSANIPs: [],
    certSANDNSNames: [],
    token,
  }));
  state.modify(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId, owner, () => ({
    server: { crt: server.certPem, key: server.keyPem },
    acceptedCAs: [{ crt: ca.certPem }],
  }));

  const listen = `127.0.0.1:${await freePort()}`;
  const { runner } = trustdService({ listen, run: (signal) => runTrustd({ listen, state, signal }) });
  const exits: (Error | undefined)[] = [];
  t.after(() => runner.stop());
  const sign = async () => {
    const { csrPem } = await createCSR({ commonName: "worker-1", ipAddresses: ["10.5.0.7"] });
    const signed = await callTrustd(listen, { token, caPem: ca.certPem, csrPem }, AbortSignal.timeout(10_000));
    return new X509Certificate(signed.crt);
  };

  assert.equal(await runner.start((err) => exits.push(err)), "Service started as goroutine");
  assert.equal(runner.describe?.(), 'Goroutine("trustd")');
  assert.equal((await sign()).issuer, new X509Certificate(ca.certPem).subject);

  await runner.stop();
  await assert.rejects(
    tcpProbe(listen, "trustd"),
    (err: Error) => (err.cause as NodeJS.ErrnoException | undefined)?.code === "ECONNREFUSED",
    "nothing listens once stopped",
  );

  await runner.start((err) => exits.push(err));
  await tcpProbe(listen, "trustd");
  assert.equal((await sign()).subject, "CN=worker-1");
  await runner.stop();
  await assert.rejects(tcpProbe(listen, "trustd"));
  assert.deepEqual(exits, [], "a requested stop is no exit");
});
