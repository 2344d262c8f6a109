// The Kubernetes secrets of a control plane from the v1.7 configs `talosctl gen config`
// writes (the stability fixtures): root secrets, cert SANs, every certificate checked
// with node:crypto against the config's CA, the kubeconfigs, and the files written.
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { parse } from "yaml";
import { loadConfig } from "../../../../agent/src/config/load.js";
import {
  KubernetesController,
  KubernetesDynamicCertsController,
} from "../../../../agent/src/controllers/secrets/kubernetes.js";
import { KubernetesCertSANsController } from "../../../../agent/src/controllers/secrets/kubernetes-cert-sans.js";
import {
  controlPlaneSecretsDirs,
  encryptionConfig,
  EtcdRootSecretsType,
  EtcdSecretsType,
  etcdSecretsId,
  RenderSecretsStaticPodController,
} from "../../../../agent/src/controllers/secrets/kubernetes-render.js";
import { RootKubernetesController } from "../../../../agent/src/controllers/secrets/kubernetes-root.js";
import { nthAddress } from "../../../../agent/src/controllers/k8s/service-cidrs.js";
import { decode } from "../../../../agent/src/api/index.js";
import { x509 } from "../../../../agent/src/pki/provider.js";
import { encodeSpec, type ResourceDefinition } from "../../../../agent/src/resources/definitions.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
} from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  configStatusDefinition,
  CONTROLPLANE_NAMESPACE,
  kubernetesDynamicCertsDefinition,
  kubernetesRootDefinition,
  kubernetesSecretsDefinition,
  secretsStatusDefinition,
  KubernetesCertSANsId,
  KubernetesDynamicCertsId,
  KubernetesDynamicCertsType,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  KubernetesSecretsId,
  KubernetesSecretsType,
  SecretsStatusType,
  StaticPodSecretsStatusId,
  type KubernetesCertsSpec,
  type KubernetesDynamicCertsSpec,
  type KubernetesRootSpec,
  type RenderStatusSpec,
} from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import {
  filteredNodeAddressId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  networkDefinitions,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import { RUNTIME_NAMESPACE, TimeStatusType } from "../../../../agent/src/resources/catalog/runtime.js";
import { CertSANType, SECRETS_NAMESPACE, type CertSANSpec } from "../../../../agent/src/resources/catalog/secrets.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { fixture } from "../../config/fixtures.js";
import { until } from "./wait.js";

const baseControlPlane = fixture("types/v1alpha1/stability/v1.7/base-controlplane.yaml");
const overridesControlPlane = fixture("types/v1alpha1/stability/v1.7/overrides-controlplane.yaml");
const baseWorker = fixture("types/v1alpha1/stability/v1.7/base-worker.yaml");

const clusterDoc = (text: string) => loadConfig(text).v1alpha1()!.cluster!;
const pem = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64").toString("utf8");
const clusterCA = (text: string) => ({ crt: pem(clusterDoc(text).ca?.crt), key: pem(clusterDoc(text).ca?.key) });
const aggregatorCA = (text: string) => ({
  crt: pem(clusterDoc(text).aggregatorCA?.crt),
  key: pem(clusterDoc(text).aggregatorCA?.key),
});

const yearMs = 8760 * 3600_000;
const oid = { serverAuth: "1.3.6.1.5.5.7.3.1", clientAuth: "1.3.6.1.5.5.7.3.2" };

interface NodeOptions {
  synced?: boolean;
  systemDir?: string;
}

/** A store with the config, the node's network and time, and the Kubernetes secrets controllers running. */
function node(t: TestContext, configYaml: string, opts: NodeOptions = {}) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(configYaml),
  );
  state.modify(
    NETWORK_NAMESPACE,
    NodeAddressType,
    filteredNodeAddressId("accumulative", "no-k8s"),
    "test.Network",
    () => ({ addresses: ["172.20.0.2/24", "fd00::2/64"] }),
  );
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, "hostname", "test.Network", () => ({
    hostname: "cp-1",
    domainname: "lab.example",
  }));
  const setSynced = (synced: boolean) =>
    state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test.Time", () => ({
      synced,
      epoch: 0,
      syncDisabled: false,
    }));
  setSynced(opts.synced ?? true);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new RootKubernetesController());
  runtime.register(new KubernetesCertSANsController(() => assert.fail("the network resources are published")));
  runtime.register(new KubernetesController());
  runtime.register(new KubernetesDynamicCertsController());
  if (opts.systemDir) runtime.register(new RenderSecretsStaticPodController(opts.systemDir));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { state, setSynced };
}

const get = <S>(state: ResourceState, type: string, id: string, namespace = SECRETS_NAMESPACE) =>
  state.get<S>(namespace, type, id)?.spec;

/** The certificate's key usage bits as names. */
function keyUsages(cert: X509Certificate): string[] {
  const ext = new x509.X509Certificate(cert.raw).getExtension(x509.KeyUsagesExtension);
  const flags = ext?.usages ?? 0;
  return Object.entries({
    digitalSignature: x509.KeyUsageFlags.digitalSignature,
    keyEncipherment: x509.KeyUsageFlags.keyEncipherment,
    keyCertSign: x509.KeyUsageFlags.keyCertSign,
  })
    .filter(([, bit]) => (flags & bit) !== 0)
    .map(([name]) => name);
}

/** Checks a leaf: signed by `ca`, a P-256 key in SEC1 PEM matching it, the usages, 1-year lifetime. */
function assertLeaf(
  pair: { crt: string; key: string },
  ca: string,
  expect: { subject: string; extKeyUsage: string[]; lifetimeMs?: number },
): X509Certificate {
  const cert = new X509Certificate(pair.crt);
  const authority = new X509Certificate(ca);
  assert.ok(cert.checkIssued(authority), "issued by the CA");
  assert.ok(cert.verify(authority.publicKey), "signature verifies with the CA's key");
  assert.equal(cert.subject, expect.subject);
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, expect.extKeyUsage);
  assert.deepEqual(keyUsages(cert), ["digitalSignature", "keyEncipherment"]);
  assert.match(pair.key, /^-----BEGIN EC PRIVATE KEY-----\n/);
  const key = createPrivateKey(pair.key);
  assert.equal(key.asymmetricKeyDetails?.namedCurve, "prime256v1");
  assert.ok(cert.checkPrivateKey(key));
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), expect.lifetimeMs ?? yearMs);
  return cert;
}

test("root secrets, SANs and certificates of a control plane (base fixture, KubePrism on)", async (t) => {
  const { state } = node(t, baseControlPlane);
  const root = await until("KubernetesRootSecrets", () =>
    get<KubernetesRootSpec>(state, KubernetesRootSecretsType, KubernetesRootSecretsId),
  );
  const ca = clusterCA(baseControlPlane);
  const agg = aggregatorCA(baseControlPlane);
  assert.deepEqual(root, {
    name: "base",
    endpoint: "https://base:6443",
    localEndpoint: "https://127.0.0.1:7445",
    certSANs: ["base"],
    apiServerIPs: ["10.96.0.1"],
    dnsDomain: "cluster.local",
    issuingCA: ca,
    acceptedCAs: [{ crt: ca.crt }],
    serviceAccount: pem(clusterDoc(baseControlPlane).serviceAccount?.key),
    aggregatorCA: agg,
    aesCBCEncryptionSecret: "",
    bootstrapTokenID: "inn7ol",
    bootstrapTokenSecret: "u4ehnti8qyls9ymo",
    secretboxEncryptionSecret: "45yd2Ke+sytiICojDf8aibTfgt99nzJmO53cjDqrCto=",
  });

  const sans = await until("CertSANs k8s", () => get<CertSANSpec>(state, CertSANType, KubernetesCertSANsId));
  assert.deepEqual(sans, {
    ips: ["10.96.0.1", "127.0.0.1", "172.20.0.2", "fd00::2"],
    dnsNames: [
      "base",
      "cp-1",
      "cp-1.lab.example",
      "kubernetes",
      "kubernetes.default",
      "kubernetes.default.svc",
      "kubernetes.default.svc.cluster.local",
      "localhost",
    ],
    fqdn: "",
  });

  const certs = await until("KubernetesDynamicCerts", () =>
    get<KubernetesDynamicCertsSpec>(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId),
  );
  const apiServer = assertLeaf(certs.apiServer, ca.crt, {
    subject: "O=kube-master\nCN=kube-apiserver",
    extKeyUsage: [oid.serverAuth],
  });
  assert.equal(
    apiServer.subjectAltName,
    "DNS:base, DNS:cp-1, DNS:cp-1.lab.example, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, DNS:localhost, " +
      "IP Address:10.96.0.1, IP Address:127.0.0.1, IP Address:172.20.0.2, IP Address:FD00:0:0:0:0:0:0:2",
  );
  const kubeletClient = assertLeaf(certs.apiServerKubeletClient, ca.crt, {
    subject: "O=system:masters\nCN=apiserver-kubelet-client",
    extKeyUsage: [oid.clientAuth],
  });
  assert.equal(kubeletClient.subjectAltName, undefined);
  assertLeaf(certs.frontProxy, agg.crt, { subject: "CN=front-proxy-client", extKeyUsage: [oid.clientAuth] });
});

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; "certificate-authority-data": string } }[];
  users: { name: string; user: { "client-certificate-data": string; "client-key-data": string } }[];
  contexts: { name: string; context: { cluster: string; namespace: string; user: string } }[];
  "current-context": string;
}

const decoded = (b64: string) => Buffer.from(b64, "base64").toString("utf8");

/** Checks a kubeconfig's names, server and CA data; returns its client certificate and key. */
function assertKubeconfig(text: string, expect: { server: string; user: string; context: string; caData: string }) {
  const k = parse(text) as Kubeconfig;
  assert.equal(text.split("\n")[0], "apiVersion: v1");
  assert.deepEqual(
    k.clusters.map((c) => [c.name, c.cluster.server, decoded(c.cluster["certificate-authority-data"])]),
    [["base", expect.server, expect.caData]],
  );
  assert.deepEqual(
    k.users.map((u) => u.name),
    [expect.user],
  );
  assert.deepEqual(k.contexts, [
    { name: expect.context, context: { cluster: "base", namespace: "default", user: expect.user } },
  ]);
  assert.equal(k["current-context"], expect.context);
  return {
    crt: decoded(k.users[0]!.user["client-certificate-data"]),
    key: decoded(k.users[0]!.user["client-key-data"]),
  };
}

test("kubeconfigs: controller manager and scheduler via the local endpoint, talos:admin via both", async (t) => {
  const { state } = node(t, baseControlPlane);
  const ca = clusterCA(baseControlPlane);
  const kc = await until("KubernetesSecrets", () =>
    get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId),
  );
  const local = "https://127.0.0.1:7445";
  const clientLifetime = yearMs + 10_000;
  for (const [text, user] of [
    [kc.controllerManagerKubeconfig, "system:kube-controller-manager"],
    [kc.schedulerKubeconfig, "system:kube-scheduler"],
  ] as const) {
    const client = assertKubeconfig(text, {
      server: local,
      user: `${user}@base`,
      context: "default@base",
      caData: ca.crt,
    });
    assertLeaf(client, ca.crt, {
      subject: `O=${user}\nCN=${user}`,
      extKeyUsage: [oid.clientAuth],
      lifetimeMs: clientLifetime,
    });
  }
  for (const [text, server] of [
    [kc.adminKubeconfig, "https://base:6443"],
    [kc.localhostAdminKubeconfig, local],
  ] as const) {
    // Talos appends the issuing CA to accepted CAs that already end with it.
    const client = assertKubeconfig(text, {
      server,
      user: "admin@base",
      context: "admin@base",
      caData: ca.crt + ca.crt,
    });
    const cert = assertLeaf(client, ca.crt, {
      subject: "O=system:masters\nCN=talos:admin",
      extKeyUsage: [oid.clientAuth],
      lifetimeMs: clientLifetime,
    });
    assert.ok(Math.abs(cert.validFromDate.getTime() - (Date.now() - 10_000)) < 60_000, "NotBefore 10 s before issue");
  }
});

test("overrides: localAPIServerPort without KubePrism, extra certSANs, dnsDomain in the SANs", async (t) => {
  const text = overridesControlPlane.replace(/kubePrism:\n(\s+)enabled: true/, "kubePrism:\n$1enabled: false");
  const { state } = node(t, text);
  const root = await until("KubernetesRootSecrets", () =>
    get<KubernetesRootSpec>(state, KubernetesRootSecretsType, KubernetesRootSecretsId),
  );
  assert.equal(root.localEndpoint, "https://localhost:5443");
  assert.deepEqual(root.certSANs, ["base", "foo", "bar"]);
  const sans = await until("CertSANs k8s", () => get<CertSANSpec>(state, CertSANType, KubernetesCertSANsId));
  assert.deepEqual(sans.dnsNames, [
    "bar",
    "base",
    "cp-1",
    "cp-1.lab.example",
    "foo",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.example.com",
    "localhost",
  ]);
  const kc = await until("KubernetesSecrets", () =>
    get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId),
  );
  assert.equal((parse(kc.schedulerKubeconfig) as Kubeconfig).clusters[0]!.cluster.server, "https://localhost:5443");
});

test("nothing is issued before the clock is synchronized", async (t) => {
  const { state, setSynced } = node(t, baseControlPlane, { synced: false });
  await until("CertSANs k8s", () => get<CertSANSpec>(state, CertSANType, KubernetesCertSANsId));
  assert.equal(get(state, KubernetesSecretsType, KubernetesSecretsId), undefined);
  assert.equal(get(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId), undefined);
  setSynced(true);
  await until("KubernetesDynamicCerts", () => get(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId));
  await until("KubernetesSecrets", () => get(state, KubernetesSecretsType, KubernetesSecretsId));
});

test("a control plane turned worker tears its Kubernetes secrets down", async (t) => {
  const { state } = node(t, baseControlPlane);
  await until("KubernetesDynamicCerts", () => get(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId));
  await until("KubernetesSecrets", () => get(state, KubernetesSecretsType, KubernetesSecretsId));
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(baseWorker),
  );
  const gone = (type: string, id: string) => (get(state, type, id) === undefined ? true : undefined);
  await until("no KubernetesRootSecrets", () => gone(KubernetesRootSecretsType, KubernetesRootSecretsId));
  await until("no CertSANs k8s", () => gone(CertSANType, KubernetesCertSANsId));
  await until("no KubernetesSecrets", () => gone(KubernetesSecretsType, KubernetesSecretsId));
  await until("no KubernetesDynamicCerts", () => gone(KubernetesDynamicCertsType, KubernetesDynamicCertsId));
});

test("the service IP is the first address of each service subnet", () => {
  assert.equal(nthAddress("10.96.0.0/12", 1), "10.96.0.1");
  assert.equal(nthAddress("10.96.7.9/12", 1), "10.96.0.1");
  assert.equal(nthAddress("fd00:10:96::/108", 1), "fd00:10:96::1");
  assert.throws(() => nthAddress("10.0.0.0/32", 1), /does not contain enough IPs/);
});

test("encryption config: secretbox, AES-CBC and identity with Talos's template spacing", () => {
  assert.equal(
    encryptionConfig({ secretboxEncryptionSecret: "S", aesCBCEncryptionSecret: "" }),
    "apiVersion: v1\nkind: EncryptionConfig\nresources:\n- resources:\n  - secrets\n  providers:\n  \n  - secretbox:\n      keys:\n      - name: key2\n        secret: S\n  \n  \n  - identity: {}\n",
  );
  assert.equal(
    encryptionConfig({ secretboxEncryptionSecret: "", aesCBCEncryptionSecret: "A" }),
    "apiVersion: v1\nkind: EncryptionConfig\nresources:\n- resources:\n  - secrets\n  providers:\n  \n  \n  - aescbc:\n      keys:\n      - name: key1\n        secret: A\n  \n  - identity: {}\n",
  );
  // Both read back as the providers in order.
  const both = parse(encryptionConfig({ secretboxEncryptionSecret: "S", aesCBCEncryptionSecret: "A" })) as {
    resources: { providers: object[] }[];
  };
  assert.deepEqual(both.resources[0]!.providers, [
    { secretbox: { keys: [{ name: "key2", secret: "S" }] } },
    { aescbc: { keys: [{ name: "key1", secret: "A" }] } },
    { identity: {} },
  ]);
});

test("static pod secret files: paths, contents, 0400 and the component's owner; SecretStatuses ready", async (t) => {
  const systemDir = mkdtempSync(path.join(os.tmpdir(), "basalt-k8s-secrets-"));
  t.after(() => rmSync(systemDir, { recursive: true, force: true }));
  const { state } = node(t, baseControlPlane, { systemDir });
  const etcdCA = { crt: pem(loadConfig(baseControlPlane).v1alpha1()!.cluster!.etcd!.ca!.crt), key: "etcd-ca-key" };
  const etcdClient = { crt: "etcd-client-cert\n", key: "etcd-client-key\n" };
  state.modify(SECRETS_NAMESPACE, EtcdRootSecretsType, etcdSecretsId, "test.Etcd", () => ({ etcdCA }));
  state.modify(SECRETS_NAMESPACE, EtcdSecretsType, etcdSecretsId, "test.Etcd", () => ({ etcdAPIServer: etcdClient }));
  const status = await until("SecretStatuses static-pods", () =>
    get<RenderStatusSpec>(state, SecretsStatusType, StaticPodSecretsStatusId, CONTROLPLANE_NAMESPACE),
  );
  const kcRes = state.get<KubernetesCertsSpec>(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId)!;
  assert.deepEqual(status, { ready: true, version: String(kcRes.metadata.version) });

  const root = get<KubernetesRootSpec>(state, KubernetesRootSecretsType, KubernetesRootSecretsId)!;
  const certs = get<KubernetesDynamicCertsSpec>(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId)!;
  const kc = kcRes.spec;
  const saPublic = createPublicKey(createPrivateKey(root.serviceAccount))
    .export({ format: "der", type: "spki" })
    .toString("base64");
  const expected: Record<string, Record<string, string>> = {
    [controlPlaneSecretsDirs.apiServer.dir]: {
      "etcd-client-ca.crt": etcdCA.crt,
      "etcd-client.crt": etcdClient.crt,
      "etcd-client.key": etcdClient.key,
      "ca.crt": root.acceptedCAs[0]!.crt,
      "apiserver.crt": certs.apiServer.crt,
      "apiserver.key": certs.apiServer.key,
      "apiserver-kubelet-client.crt": certs.apiServerKubeletClient.crt,
      "apiserver-kubelet-client.key": certs.apiServerKubeletClient.key,
      "service-account.pub": `-----BEGIN EC PUBLIC KEY-----\n${saPublic.match(/.{1,64}/g)!.join("\n")}\n-----END EC PUBLIC KEY-----\n`,
      "service-account.key": root.serviceAccount,
      "aggregator-ca.crt": root.aggregatorCA.crt,
      "front-proxy-client.crt": certs.frontProxy.crt,
      "front-proxy-client.key": certs.frontProxy.key,
      "encryptionconfig.yaml": encryptionConfig(root),
    },
    [controlPlaneSecretsDirs.controllerManager.dir]: {
      "ca.crt": root.issuingCA!.crt,
      "ca.key": root.issuingCA!.key,
      "service-account.key": root.serviceAccount,
      kubeconfig: kc.controllerManagerKubeconfig,
    },
    [controlPlaneSecretsDirs.scheduler.dir]: { kubeconfig: kc.schedulerKubeconfig },
  };
  const owners = { "kube-apiserver": 65534, "kube-controller-manager": 65535, "kube-scheduler": 65536 };
  assert.deepEqual(readdirSync(path.join(systemDir, "secrets", "kubernetes")).sort(), Object.keys(owners));
  for (const [dir, files] of Object.entries(expected)) {
    const owner = owners[path.basename(dir) as keyof typeof owners];
    assert.equal(statSync(path.join(systemDir, dir)).mode & 0o7777, 0o755, `${dir} is 0755`);
    assert.deepEqual(readdirSync(path.join(systemDir, dir)).sort(), Object.keys(files).sort(), `the files of ${dir}`);
    for (const [name, contents] of Object.entries(files)) {
      const file = path.join(systemDir, dir, name);
      const st = statSync(file);
      assert.deepEqual([st.mode & 0o7777, st.uid, st.gid], [0o400, owner, owner], `${file}: mode and owner`);
      assert.equal(readFileSync(file, "utf8"), contents, `${file}: contents`);
    }
  }
  assert.ok(
    expected[controlPlaneSecretsDirs.apiServer.dir]!["encryptionconfig.yaml"]!.includes(
      "secret: 45yd2Ke+sytiICojDf8aibTfgt99nzJmO53cjDqrCto=",
    ),
  );
});

test("the resources' protobuf specs carry every field (decoded with the descriptor set's messages)", async (t) => {
  const { state } = node(t, baseControlPlane);
  const root = await until("KubernetesRootSecrets", () =>
    get<KubernetesRootSpec>(state, KubernetesRootSecretsType, KubernetesRootSecretsId),
  );
  const certs = await until("KubernetesDynamicCerts", () =>
    get<KubernetesDynamicCertsSpec>(state, KubernetesDynamicCertsType, KubernetesDynamicCertsId),
  );
  const kc = await until("KubernetesSecrets", () =>
    get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId),
  );
  const roundTrip = <S>(def: ResourceDefinition<S>, spec: S) => decode(def.protoSpecType, encodeSpec(def, spec));
  const text = (b: unknown) => Buffer.from(b as Uint8Array).toString("utf8");

  const r = roundTrip(kubernetesRootDefinition, root);
  assert.equal(r["name"], "base");
  assert.deepEqual(
    [r["endpoint"], r["local_endpoint"]],
    [{ full_path: "https://base:6443" }, { full_path: "https://127.0.0.1:7445" }],
  );
  assert.deepEqual(r["cert_sa_ns"], ["base"]);
  assert.deepEqual(r["api_server_ips"], [{ ip: Buffer.from([10, 96, 0, 1]) }]);
  assert.equal(r["dns_domain"], "cluster.local");
  const pair = (v: unknown) => ({ crt: text((v as { crt: unknown }).crt), key: text((v as { key: unknown }).key) });
  assert.deepEqual(pair(r["issuing_ca"]), root.issuingCA);
  assert.deepEqual(pair(r["aggregator_ca"]), root.aggregatorCA);
  assert.equal(text((r["service_account"] as { key: unknown }).key), root.serviceAccount);
  assert.deepEqual(
    (r["accepted_c_as"] as { crt: unknown }[]).map((c) => text(c.crt)),
    [root.issuingCA!.crt],
  );
  assert.deepEqual(
    [r["bootstrap_token_id"], r["bootstrap_token_secret"], r["secretbox_encryption_secret"]],
    ["inn7ol", "u4ehnti8qyls9ymo", root.secretboxEncryptionSecret],
  );

  const d = roundTrip(kubernetesDynamicCertsDefinition, certs);
  assert.deepEqual(
    [pair(d["api_server"]), pair(d["api_server_kubelet_client"]), pair(d["front_proxy"])],
    [certs.apiServer, certs.apiServerKubeletClient, certs.frontProxy],
  );

  const k = roundTrip(kubernetesSecretsDefinition, kc);
  assert.deepEqual(k, {
    scheduler_kubeconfig: kc.schedulerKubeconfig,
    controller_manager_kubeconfig: kc.controllerManagerKubeconfig,
    localhost_admin_kubeconfig: kc.localhostAdminKubeconfig,
    admin_kubeconfig: kc.adminKubeconfig,
  });
  assert.deepEqual(roundTrip(secretsStatusDefinition, { ready: true, version: "3" }), { ready: true, version: "3" });
  assert.deepEqual(roundTrip(configStatusDefinition, { ready: true, version: "111" }), { ready: true, version: "111" });
});

test("certificates are kept while fresh and issued again past half of their year", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(baseControlPlane),
  );
  const setTime = (epoch: number) =>
    state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", "test.Time", () => ({
      synced: true,
      epoch,
      syncDisabled: false,
    }));
  setTime(0);
  let now = Date.now();
  // The controller reads the clock twice per reconcile once it has issued (whether it issues again or not).
  let clockReads = 0;
  const clock = () => {
    clockReads++;
    return now;
  };
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new RootKubernetesController());
  runtime.register(new KubernetesController(clock));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const first = await until("KubernetesSecrets", () =>
    get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId),
  );
  // An input event within the half-life changes nothing.
  now += 100 * 24 * 3600_000;
  const reads = clockReads;
  setTime(1);
  await until("a reconcile of epoch 1", () => (clockReads >= reads + 2 ? true : undefined));
  assert.equal(
    get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId)?.adminKubeconfig,
    first.adminKubeconfig,
  );
  // Past half of the year, the next reconcile issues anew.
  now += 90 * 24 * 3600_000;
  setTime(2);
  const renewed = await until("renewed kubeconfigs", () => {
    const spec = get<KubernetesCertsSpec>(state, KubernetesSecretsType, KubernetesSecretsId);
    return spec && spec.adminKubeconfig !== first.adminKubeconfig ? spec : undefined;
  });
  assert.notEqual(renewed.schedulerKubeconfig, first.schedulerKubeconfig);
});
