import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { test, type TestContext } from "node:test";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { generateConfigs, type GeneratedConfigs } from "../../../../agent/src/config/generate/index.js";
import { MachineTypeController } from "../../../../agent/src/controllers/config/machine-type.js";
import { APIController } from "../../../../agent/src/controllers/secrets/api.js";
import { APICertSANsController } from "../../../../agent/src/controllers/secrets/cert-sans.js";
import { RootController } from "../../../../agent/src/controllers/secrets/root.js";
import { TrustdController } from "../../../../agent/src/controllers/secrets/trustd.js";
import type { TrustdAttempt } from "../../../../agent/src/controllers/secrets/trustd-request.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
} from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  HostnameStatusType,
  NETWORK_NAMESPACE,
  networkDefinitions,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import {
  ApiCertificatesId,
  ApiCertificatesType,
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  TrustdCertificatesId,
  TrustdCertificatesType,
  type APICertsSpec,
  type OSRootSpec,
  type TrustdCertsSpec,
} from "../../../../agent/src/resources/catalog/secrets.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "./wait.js";
import { signWorkerCSR } from "../../../../agent/src/trustd/sign.js";
import { generateSelfSignedCA } from "../../../../agent/src/pki/index.js";

let generated: GeneratedConfigs | undefined;
async function configs(): Promise<GeneratedConfigs> {
  generated ??= await generateConfigs({ clusterName: "unit", endpoint: "https://10.9.0.1:6443", installDisk: "" });
  return generated;
}

const fallback = () => ({ addresses: ["192.0.2.99"], hostname: "fallback", fqdn: "fallback" });

/** A store with the config, address and hostname a node would have, and the secrets controllers running. */
function node(
  t: TestContext,
  configYaml: string,
  attempt: TrustdAttempt = async () => assert.fail("a control plane does not call trustd"),
) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(configYaml),
  );
  const setAddresses = (addresses: string[]) =>
    state.modify(NETWORK_NAMESPACE, NodeAddressType, "current", "test.Network", () => ({ addresses }));
  setAddresses(["10.9.0.5/24"]);
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, "hostname", "test.Network", () => ({
    hostname: "node-5",
    domainname: "lab",
  }));
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new MachineTypeController());
  runtime.register(new RootController());
  runtime.register(new APICertSANsController(fallback));
  runtime.register(new APIController({ attempt, policy: { totalMs: 300, attemptMs: 100, firstDelayMs: 5 } }));
  runtime.register(new TrustdController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { state, setAddresses };
}

const api = (state: ResourceState) =>
  state.get<APICertsSpec>(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId)?.spec;

test("control plane: OS root from the config; API server + impersonator client and trustd certificates signed locally", async (t) => {
  const cfg = await configs();
  const { state } = node(t, cfg.controlplane);
  const root = await until(
    "OSRootSecrets",
    () => state.get<OSRootSpec>(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId)?.spec,
  );
  assert.ok(root.issuingCA?.key);
  assert.equal(root.token, cfg.secrets.trustdInfo.token);
  const certs = await until("ApiCertificates", () => api(state));
  const ca = new X509Certificate(root.issuingCA!.crt);
  assert.deepEqual(certs.acceptedCAs, [{ crt: root.issuingCA!.crt }]);

  const server = new X509Certificate(certs.server.crt);
  assert.ok(server.verify(ca.publicKey));
  assert.equal(server.subject, "CN=node-5.lab");
  assert.match(server.subjectAltName!, /IP Address:10\.9\.0\.5/);
  assert.match(server.subjectAltName!, /DNS:node-5\.lab/);
  assert.deepEqual(server.keyUsage, ["1.3.6.1.5.5.7.3.1"]);

  const client = new X509Certificate(certs.client!.crt);
  assert.equal(client.subject, "O=os:impersonator\nCN=node-5.lab");
  assert.deepEqual(client.keyUsage, ["1.3.6.1.5.5.7.3.2"]);

  const trustd = await until(
    "TrustdCertificates",
    () => state.get<TrustdCertsSpec>(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId)?.spec,
  );
  const trustdCert = new X509Certificate(trustd.server.crt);
  assert.ok(trustdCert.verify(ca.publicKey));
  assert.match(trustdCert.subjectAltName!, /IP Address:10\.9\.0\.5/);
});

test("worker: no local key, the CSR goes to trustd at the control-plane endpoint; waits while it fails, then uses its answer", async (t) => {
  const cfg = await configs();
  const cpRoot = loadConfig(cfg.controlplane).v1alpha1WithDefaults()!.machine!;
  const caCrt = Buffer.from(cpRoot.ca!.crt!, "base64").toString();
  const caKey = Buffer.from(cpRoot.ca!.key!, "base64").toString();
  const calls: { endpoint: string; token: string }[] = [];
  let reachable = false;
  // trustd stand-in: refuses until "the control plane is up", then signs with the real rules.
  const attempt: TrustdAttempt = async (endpoint, req) => {
    calls.push({ endpoint, token: req.token });
    if (!reachable) throw new Error("connect ECONNREFUSED 10.9.0.1:50001");
    return signWorkerCSR(
      { issuingCA: { crt: caCrt, key: caKey }, acceptedCAs: [{ crt: caCrt }] },
      Buffer.from(req.csrPem),
    );
  };
  const { state, setAddresses } = node(t, cfg.worker, attempt);
  await until("several refused attempts", () => (calls.length >= 3 ? true : undefined));
  assert.equal(api(state), undefined);
  assert.equal(state.get(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId), undefined);
  assert.ok(calls.every((c) => c.endpoint === "10.9.0.1:50001" && c.token === cfg.secrets.trustdInfo.token));

  reachable = true;
  const certs = await until("ApiCertificates from trustd", () => api(state));
  assert.equal(certs.client, undefined);
  assert.deepEqual(certs.acceptedCAs, [{ crt: caCrt }]);
  const server = new X509Certificate(certs.server.crt);
  assert.match(server.subjectAltName!, /IP Address:10\.9\.0\.5/);
  assert.ok(server.checkPrivateKey(createPrivateKey(certs.server.key.replace(/ED25519 PRIVATE KEY/g, "PRIVATE KEY"))));

  // A new address: a new request, a certificate naming it.
  const before = calls.length;
  setAddresses(["10.9.0.6/24"]);
  const renewed = await until("a certificate for the new address", () => {
    const c = api(state);
    return c && c.server.crt !== certs.server.crt ? c : undefined;
  });
  assert.match(new X509Certificate(renewed.server.crt).subjectAltName!, /IP Address:10\.9\.0\.6/);
  assert.ok(calls.length > before);
});

test("an unchanged input set is not re-requested before half-life", async (t) => {
  const cfg = await configs();
  const cpRoot = loadConfig(cfg.controlplane).v1alpha1WithDefaults()!.machine!;
  const ca = {
    crt: Buffer.from(cpRoot.ca!.crt!, "base64").toString(),
    key: Buffer.from(cpRoot.ca!.key!, "base64").toString(),
  };
  let calls = 0;
  const { state, setAddresses } = node(t, cfg.worker, async (_e, req) => {
    calls++;
    return signWorkerCSR({ issuingCA: ca, acceptedCAs: [{ crt: ca.crt }] }, Buffer.from(req.csrPem));
  });
  const first = await until("ApiCertificates", () => api(state));
  // The same addresses written again (a no-op) and an unrelated prefix change that keeps the IP.
  setAddresses(["10.9.0.5/24"]);
  setAddresses(["10.9.0.5/16"]);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(calls, 1);
  assert.equal(api(state)!.server.crt, first.server.crt);
});

test("accepted CAs follow machine.acceptedCAs, and an OS CA rotation re-issues from the new CA", async (t) => {
  const cfg = await configs();
  const b64 = (pem: string) => Buffer.from(pem).toString("base64");
  const next = await generateSelfSignedCA({ organizations: ["talos"] });
  const oldCrt = Buffer.from(loadConfig(cfg.controlplane).v1alpha1()!.machine!.ca!.crt!, "base64").toString();
  // Step 1 of a rotation: the new CA is accepted beside the current one.
  const withAccepted = cfg.controlplane.replace(
    /^machine:\n/m,
    `machine:\n    acceptedCAs:\n        - crt: ${b64(next.certPem)}\n`,
  );
  const { state } = node(t, withAccepted);
  const first = await until("ApiCertificates", () => api(state));
  assert.deepEqual(
    first.acceptedCAs.map((c) => c.crt),
    [next.certPem, oldCrt],
  );
  assert.ok(new X509Certificate(first.server.crt).verify(new X509Certificate(oldCrt).publicKey));

  // Step 2: the new CA issues, the old one is still accepted.
  const rotated = loadConfig(withAccepted);
  const machine = rotated.v1alpha1()!.machine!;
  const swapped = withAccepted
    .replace(machine.ca!.crt!, b64(next.certPem))
    .replace(machine.ca!.key!, b64(next.keyPem))
    .replace(b64(next.certPem) + "\n", b64(oldCrt) + "\n");
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(swapped),
  );
  const second = await until("certificates from the new CA", () => {
    const c = api(state);
    return c && c.server.crt !== first.server.crt ? c : undefined;
  });
  assert.ok(new X509Certificate(second.server.crt).verify(new X509Certificate(next.certPem).publicKey));
  assert.deepEqual(second.acceptedCAs.map((c) => c.crt).sort(), [next.certPem, oldCrt].sort());
  const trustd = await until("trustd certificate from the new CA", () => {
    const c = state.get<TrustdCertsSpec>(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId)?.spec;
    return c && new X509Certificate(c.server.crt).verify(new X509Certificate(next.certPem).publicKey) ? c : undefined;
  });
  assert.equal(trustd.acceptedCAs.length, 2);
});
