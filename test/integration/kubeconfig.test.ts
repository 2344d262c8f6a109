// MachineService.Kubeconfig through the real sandbox process (machined + apid, mutual TLS):
// the tar.gz with its one file, the admin kubeconfig's names and server, its client
// certificate minted per call from the cluster CA of the applied config; and the
// control plane's Kubernetes secrets published as resources.
import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { after, before, test } from "node:test";
import { parse } from "yaml";
import type { NodeClient } from "../../agent/src/client/client.js";
import { loadConfig } from "../../agent/src/config/load.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { type TarEntry, tarEntries } from "./helpers/tar-entries.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-kubeconfig-"));
let sandbox: SandboxProcess;
let admin: NodeClient;
let config = "";

before(async () => {
  ({ sandbox, admin, config } = await startConfiguredSandbox({
    clusterName: "kube",
    stateDir,
    args: ["--apid-in-process"],
  }));
});

after(async () => {
  admin.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; "certificate-authority-data": string } }[];
  users: { name: string; user: { "client-certificate-data": string; "client-key-data": string } }[];
  contexts: { name: string; context: { cluster: string; namespace: string; user: string } }[];
  "current-context": string;
}

const fromBase64 = (b64: string) => Buffer.from(b64, "base64").toString("utf8");

async function fetchKubeconfig(): Promise<{ entries: TarEntry[]; kubeconfig: Kubeconfig }> {
  const entries = tarEntries(gunzipSync(await admin.kubeconfig()));
  return { entries, kubeconfig: parse(entries[0]!.contents.toString("utf8")) as Kubeconfig };
}

test("Kubeconfig: one file `kubeconfig` (0600) with admin@<cluster> for the cluster endpoint, signed by the cluster CA", async () => {
  const { entries, kubeconfig } = await fetchKubeconfig();
  assert.deepEqual(
    entries.map((e) => [e.name, e.mode, e.type]),
    [["kubeconfig", 0o600, "0"]],
  );
  const cluster = loadConfig(config).v1alpha1()!.cluster!;
  const caPem = fromBase64(cluster.ca!.crt!);
  assert.deepEqual(
    kubeconfig.clusters.map((c) => [c.name, c.cluster.server, fromBase64(c.cluster["certificate-authority-data"])]),
    [["kube", "https://127.0.0.1:6443", caPem]],
  );
  assert.deepEqual(
    kubeconfig.users.map((u) => u.name),
    ["admin@kube"],
  );
  assert.deepEqual(kubeconfig.contexts, [
    { name: "admin@kube", context: { cluster: "kube", namespace: "default", user: "admin@kube" } },
  ]);
  assert.equal(kubeconfig["current-context"], "admin@kube");

  const cert = new X509Certificate(fromBase64(kubeconfig.users[0]!.user["client-certificate-data"]));
  const ca = new X509Certificate(caPem);
  assert.ok(
    cert.checkIssued(ca) && cert.verify(ca.publicKey),
    "the client certificate verifies against the config's cluster CA",
  );
  assert.equal(cert.subject, "O=system:masters\nCN=admin");
  assert.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  assert.equal(
    cert.validToDate.getTime() - cert.validFromDate.getTime(),
    8760 * 3600_000 + 10_000,
    "1 year from 10 s before issue",
  );
  assert.ok(cert.checkPrivateKey(createPrivateKey(fromBase64(kubeconfig.users[0]!.user["client-key-data"]))));

  // Minted on each call: a second call holds another certificate.
  const again = await fetchKubeconfig();
  assert.notEqual(
    again.kubeconfig.users[0]!.user["client-certificate-data"],
    kubeconfig.users[0]!.user["client-certificate-data"],
  );
});

type Resource = { resource: { spec: { yaml_spec: string } } };
const resourceYaml = async (type: string, id: string) =>
  parse(((await admin.resourceGet("secrets", type, id)) as Resource).resource.spec.yaml_spec) as Record<
    string,
    unknown
  >;

test("the control plane publishes its Kubernetes root secrets and a kube-apiserver certificate from the cluster CA", async () => {
  const root = await eventually(() => resourceYaml("KubernetesRootSecrets.secrets.talos.dev", "k8s"));
  assert.equal(root["name"], "kube");
  assert.deepEqual(root["endpoint"], {
    scheme: "https",
    opaque: "",
    user: null,
    host: "127.0.0.1:6443",
    path: "",
    rawpath: "",
    omithost: false,
    forcequery: false,
    rawquery: "",
    fragment: "",
    rawfragment: "",
  });
  assert.deepEqual(root["apiServerIPs"], ["10.96.0.1"]);
  const certs = (await eventually(() =>
    resourceYaml("KubernetesDynamicCerts.secrets.talos.dev", "k8s-dynamic-certs"),
  )) as { apiServer: { crt: string } };
  const apiServer = new X509Certificate(fromBase64(certs.apiServer.crt));
  const ca = new X509Certificate(fromBase64(loadConfig(config).v1alpha1()!.cluster!.ca!.crt!));
  assert.ok(apiServer.verify(ca.publicKey));
  assert.equal(apiServer.subject, "O=kube-master\nCN=kube-apiserver");
  const sans = apiServer.subjectAltName!.split(", ");
  for (const san of [
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "DNS:localhost",
    "IP Address:10.96.0.1",
    "IP Address:127.0.0.1",
  ]) {
    assert.ok(sans.includes(san), `${san} in ${apiServer.subjectAltName}`);
  }
});
