// etcd's secrets, config, PKI-on-disk and member controllers against a store of fakes.
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import YAML from "yaml";
import { generateConfigs, type GeneratedConfigs } from "../../../../agent/src/config/generate/index.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { EtcdConfigController } from "../../../../agent/src/controllers/etcd/config.js";
import { EtcdMemberController } from "../../../../agent/src/controllers/etcd/member.js";
import { EtcdPKIController } from "../../../../agent/src/controllers/etcd/pki.js";
import { EtcdController, EtcdRootController } from "../../../../agent/src/controllers/secrets/etcd.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
} from "../../../../agent/src/resources/catalog/config.js";
import {
  ETCD_NAMESPACE,
  EtcdConfigId,
  EtcdConfigType,
  EtcdLocalMemberId,
  EtcdMemberType,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdRootSecretsId,
  EtcdRootSecretsType,
  EtcdSecretsId,
  EtcdSecretsType,
  type EtcdCertsSpec,
  type EtcdConfigSpec,
  type EtcdMemberSpec,
  type EtcdPKIStatusSpec,
  type EtcdRootSpec,
} from "../../../../agent/src/resources/catalog/etcd.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  networkDefinitions,
  NetworkStatusId,
  NetworkStatusType,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import { RUNTIME_NAMESPACE, ServiceType, TimeStatusType } from "../../../../agent/src/resources/catalog/runtime.js";
import { SECRETS_NAMESPACE } from "../../../../agent/src/resources/catalog/secrets.js";
import { ControllerRuntime, type Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "../secrets/wait.js";

let generated: GeneratedConfigs | undefined;
const configs = async () =>
  (generated ??= await generateConfigs({ clusterName: "unit", endpoint: "https://10.9.0.1:6443", installDisk: "" }));

function store(t: TestContext, ...controllers: Controller[]) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  for (const c of controllers) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return state;
}
const setConfig = (state: ResourceState, yaml: string) =>
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test", () => loadConfig(yaml));

test("EtcdRootSecrets and EtcdConfig from a control plane's config; none on a worker", async (t) => {
  const cfg = await configs();
  const state = store(t, new EtcdRootController(), new EtcdConfigController());
  setConfig(state, cfg.controlplane);
  const root = await until(
    "EtcdRootSecrets",
    () => state.get<EtcdRootSpec>(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId)?.spec,
  );
  assert.equal(root.etcdCA.crt, cfg.secrets.certs.etcd.crt);
  assert.equal(root.etcdCA.key, cfg.secrets.certs.etcd.key);
  const config = await until(
    "EtcdConfig",
    () => state.get<EtcdConfigSpec>(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId)?.spec,
  );
  assert.deepEqual(config, {
    advertiseValidSubnets: [],
    advertiseExcludeSubnets: [],
    listenValidSubnets: [],
    listenExcludeSubnets: [],
    image: "gcr.io/etcd-development/etcd:v3.5.13",
    extraArgs: {},
  });

  const doc = YAML.parseAllDocuments(cfg.controlplane)[0]!.toJSON() as {
    cluster: { etcd: Record<string, unknown> };
    machine: { network?: unknown };
  };
  doc.cluster.etcd = {
    ...doc.cluster.etcd,
    subnet: "10.9.0.0/24",
    listenSubnets: ["10.9.0.0/24"],
    extraArgs: { "election-timeout": "5000" },
  };
  doc.machine.network = {
    interfaces: [{ interface: "eth0", vip: { ip: "10.9.0.100" }, vlans: [{ vlanId: 5, vip: { ip: "10.9.5.100" } }] }],
  };
  setConfig(state, YAML.stringify(doc));
  await until("EtcdConfig from the patched config", () =>
    state.get<EtcdConfigSpec>(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId)?.spec.listenValidSubnets.length
      ? true
      : undefined,
  );
  assert.deepEqual(state.get<EtcdConfigSpec>(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId)!.spec, {
    advertiseValidSubnets: ["10.9.0.0/24"],
    advertiseExcludeSubnets: ["10.9.0.100", "10.9.5.100"],
    listenValidSubnets: ["10.9.0.0/24"],
    listenExcludeSubnets: [],
    image: "gcr.io/etcd-development/etcd:v3.5.13",
    extraArgs: { "election-timeout": "5000" },
  });

  setConfig(state, cfg.worker);
  await until("no EtcdConfig on a worker", () =>
    state.get(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId) ? undefined : true,
  );
  assert.equal(state.get(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId), undefined);
});

test("EtcdSecrets: Talos's certificates once network and time are ready", async (t) => {
  const cfg = await configs();
  const state = store(t, new EtcdRootController(), new EtcdController());
  setConfig(state, cfg.controlplane);
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, "test", () => ({
    hostname: "cp-1",
    domainname: "lab",
  }));
  state.modify(NETWORK_NAMESPACE, NodeAddressType, "accumulative-no-k8s", "test", () => ({
    addresses: ["10.9.0.5/24", "fd00::5/64"],
  }));
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, "test", () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  }));
  state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test", () => ({
    synced: false,
    epoch: 0,
    syncDisabled: false,
  }));
  await until("EtcdRootSecrets", () => state.get(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId));
  // Not before time is synced (a certificate's validity starts now).
  assert.equal(state.get(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId), undefined);
  state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test", () => ({
    synced: true,
    epoch: 1,
    syncDisabled: false,
  }));
  const certs = await until(
    "EtcdSecrets",
    () => state.get<EtcdCertsSpec>(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId)?.spec,
  );

  const ca = new X509Certificate(cfg.secrets.certs.etcd.crt);
  const cert = (pem: string) => {
    const c = new X509Certificate(pem);
    assert.ok(c.verify(ca.publicKey));
    assert.equal(c.publicKey.asymmetricKeyType, "ec");
    const lifetimeH = (Date.parse(c.validTo) - Date.parse(c.validFrom)) / 3600_000;
    assert.ok(Math.abs(lifetimeH - 87600) < 1, `lifetime ${lifetimeH} h`);
    return c;
  };
  const server = cert(certs.etcd.crt);
  assert.equal(server.subject, "CN=cp-1");
  assert.equal(
    server.subjectAltName,
    "DNS:cp-1, DNS:cp-1.lab, DNS:localhost, IP Address:10.9.0.5, IP Address:FD00:0:0:0:0:0:0:5, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1",
  );
  assert.deepEqual(server.keyUsage, ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
  const peer = cert(certs.etcdPeer.crt);
  assert.equal(peer.subject, "CN=cp-1");
  assert.equal(peer.subjectAltName, "DNS:cp-1, DNS:cp-1.lab, IP Address:10.9.0.5, IP Address:FD00:0:0:0:0:0:0:5");
  for (const [pair, cn] of [
    [certs.etcdAdmin, "talos"],
    [certs.etcdAPIServer, "kube-apiserver"],
  ] as const) {
    const c = cert(pair.crt);
    assert.equal(c.subject, `CN=${cn}`);
    assert.equal(c.subjectAltName, undefined);
    assert.deepEqual(c.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  }
});

test("the PKI on disk: Talos's file names, 0700/0400, owned by etcd's user; PKIStatus names the secrets version", async (t) => {
  const cfg = await configs();
  const dir = path.join(await mkdtemp(path.join(os.tmpdir(), "etcd-pki-")), "secrets", "etcd");
  t.after(() => rm(path.dirname(path.dirname(dir)), { recursive: true, force: true }));
  const state = store(t, new EtcdPKIController(dir));
  const root: EtcdRootSpec = { etcdCA: cfg.secrets.certs.etcd };
  const pair = (n: string) => ({ crt: `crt ${n}\n`, key: `key ${n}\n` });
  state.modify(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId, "test", () => root);
  const secrets = state.modify<EtcdCertsSpec>(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId, "test", () => ({
    etcd: pair("server"),
    etcdPeer: pair("peer"),
    etcdAdmin: pair("admin"),
    etcdAPIServer: pair("apiserver"),
  }));
  const status = await until(
    "PKIStatus",
    () => state.get<EtcdPKIStatusSpec>(ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId)?.spec,
  );
  assert.deepEqual(status, { ready: true, version: String(secrets.metadata.version) });
  assert.deepEqual((await readdir(dir)).sort(), [
    "admin.crt",
    "admin.key",
    "ca.crt",
    "ca.key",
    "peer.crt",
    "peer.key",
    "server.crt",
    "server.key",
  ]);
  const d = await stat(dir);
  assert.equal(d.mode & 0o777, 0o700);
  assert.equal(d.uid, 60);
  for (const name of await readdir(dir)) {
    const s = await stat(path.join(dir, name));
    assert.equal(s.mode & 0o777, 0o400, name);
    assert.deepEqual([s.uid, s.gid], [60, 60], name);
  }
  assert.equal(await readFile(path.join(dir, "peer.key"), "utf8"), "key peer\n");
  assert.equal(await readFile(path.join(dir, "ca.crt"), "utf8"), cfg.secrets.certs.etcd.crt);
});

test("EtcdMember local: the member ID as %016x while etcd runs healthy, gone otherwise", async (t) => {
  const state = store(t, new EtcdMemberController(async () => 0x1234abcdn));
  state.modify(RUNTIME_NAMESPACE, ServiceType, "etcd", "test", () => ({
    running: true,
    healthy: true,
    unknown: false,
  }));
  const member = await until(
    "EtcdMember",
    () => state.get<EtcdMemberSpec>(ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId)?.spec,
  );
  assert.deepEqual(member, { memberID: "000000001234abcd" });
  state.modify(RUNTIME_NAMESPACE, ServiceType, "etcd", "test", () => ({
    running: true,
    healthy: false,
    unknown: false,
  }));
  await until("no EtcdMember", () => (state.get(ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId) ? undefined : true));
});
