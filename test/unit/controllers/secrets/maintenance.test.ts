import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import {
  MaintenanceCertSANsController,
  MaintenanceController,
  MaintenanceRootController,
} from "../../../../agent/src/controllers/secrets/maintenance.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStage,
} from "../../../../agent/src/resources/catalog/runtime.js";
import {
  MaintenanceRootSecretsId,
  MaintenanceRootSecretsType,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
  type MaintenanceRootSpec,
  type MaintenanceServiceCertsSpec,
} from "../../../../agent/src/resources/catalog/secrets.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "./wait.js";

test("maintenance certificates exist only while the node is in maintenance, and follow its addresses", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const setStage = (stage: MachineStage) =>
    state.modify(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, "test.Sequencer", () => ({
      stage,
      status: { ready: false, unmetConditions: [] },
    }));
  const setAddresses = (addresses: string[]) =>
    state.modify(NETWORK_NAMESPACE, NodeAddressType, "current", "test.Network", () => ({ addresses }));
  setStage("booting");
  setAddresses(["10.7.0.4/24"]);
  const runtime = new ControllerRuntime(state);
  for (const c of [
    new MaintenanceRootController(),
    new MaintenanceCertSANsController(() => ({ addresses: [], hostname: "h", fqdn: "h" }), ["10.7.0.99"]),
    new MaintenanceController(),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const certs = () =>
    state.get<MaintenanceServiceCertsSpec>(
      SECRETS_NAMESPACE,
      MaintenanceServiceCertificatesType,
      MaintenanceServiceCertificatesId,
    )?.spec;

  await runtime.whenIdle();
  assert.equal(certs(), undefined, "no maintenance certificate outside maintenance");

  setStage("maintenance");
  const first = await until("maintenance certificates", certs);
  const root = state.get<MaintenanceRootSpec>(
    SECRETS_NAMESPACE,
    MaintenanceRootSecretsType,
    MaintenanceRootSecretsId,
  )!.spec;
  assert.deepEqual(first.ca, { crt: root.ca.crt, key: "" });
  const cert = new X509Certificate(first.server.crt);
  assert.equal(cert.subject, "CN=maintenance-service.talos.dev");
  assert.ok(cert.verify(new X509Certificate(root.ca.crt).publicKey));
  assert.match(cert.subjectAltName!, /IP Address:10\.7\.0\.4/);
  assert.match(cert.subjectAltName!, /IP Address:10\.7\.0\.99/);
  assert.match(cert.subjectAltName!, /IP Address:127\.0\.0\.1/);

  // A DHCP lease later: the certificate names the new address, from the same CA.
  setAddresses(["10.7.0.4/24", "10.8.0.5/24"]);
  const second = await until("a certificate for the new address", () =>
    certs()?.server.crt !== first.server.crt ? certs() : undefined,
  );
  assert.match(new X509Certificate(second.server.crt).subjectAltName!, /IP Address:10\.8\.0\.5/);
  assert.equal(second.ca.crt, first.ca.crt);

  setStage("installing");
  await runtime.whenIdle();
  assert.ok(certs(), "kept while installing");

  setStage("booting");
  await until("the maintenance material to go", () =>
    certs() === undefined && !state.get(SECRETS_NAMESPACE, MaintenanceRootSecretsType, MaintenanceRootSecretsId)
      ? true
      : undefined,
  );
});
