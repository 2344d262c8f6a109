// The Kubeconfig handler on the v1.7 stability configs: a worker (and a node without a
// config) gets Talos's Unimplemented answer; adminKubeconfig.certLifetime and
// cluster.acceptedCAs shape the certificate and the CA data.
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { test } from "node:test";
import { parse, stringify } from "yaml";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { UnimplementedError } from "../../../../agent/src/errors.js";
import { adminKubeconfig, kubeconfigHandler, singleFileTarGz } from "../../../../agent/src/machined/rpc/kubeconfig.js";
import { generateSelfSignedCA } from "../../../../agent/src/pki/index.js";
import { fixture } from "../../config/fixtures.js";

const controlPlane = fixture("types/v1alpha1/stability/v1.7/base-controlplane.yaml");
const worker = fixture("types/v1alpha1/stability/v1.7/base-worker.yaml");
const fromBase64 = (b64: string) => Buffer.from(b64, "base64").toString("utf8");

test("a worker and a node without a config are answered Unimplemented, as Talos does", async () => {
  for (const config of [loadConfig(worker), undefined]) {
    await assert.rejects(
      kubeconfigHandler({ activeConfig: () => config })(),
      (err: unknown) =>
        err instanceof UnimplementedError && err.message === "kubeconfig is only available on control plane nodes",
    );
  }
});

test("the tar.gz holds one regular file with the given mode and contents", () => {
  const tar = gunzipSync(singleFileTarGz("kubeconfig", Buffer.from("hello\n"), 0o600, new Date(1_700_000_000_000)));
  assert.equal(tar.length, 512 + 512 + 1024);
  assert.equal(tar.subarray(0, 10).toString(), "kubeconfig");
  assert.equal(tar.subarray(100, 107).toString(), "0000600");
  assert.equal(tar.subarray(124, 135).toString(), "00000000006");
  assert.equal(tar.subarray(156, 157).toString(), "0");
  assert.equal(tar.subarray(512, 518).toString(), "hello\n");
});

test("adminKubeconfig.certLifetime sets the lifetime; accepted CAs come before the cluster CA", async () => {
  const other = await generateSelfSignedCA({ organizations: ["kubernetes"], algorithm: "ecdsa-p256" });
  const doc = parse(controlPlane) as { cluster: Record<string, unknown> };
  doc.cluster["adminKubeconfig"] = { certLifetime: "2h0m0s" };
  doc.cluster["acceptedCAs"] = [{ crt: Buffer.from(other.certPem).toString("base64") }];
  const config = loadConfig(stringify(doc));
  const k = parse(await adminKubeconfig(config)) as {
    clusters: { cluster: { "certificate-authority-data": string } }[];
    users: { user: { "client-certificate-data": string } }[];
  };
  const clusterCA = fromBase64((doc.cluster["ca"] as { crt: string }).crt);
  assert.equal(fromBase64(k.clusters[0]!.cluster["certificate-authority-data"]), other.certPem + clusterCA);
  const cert = new X509Certificate(fromBase64(k.users[0]!.user["client-certificate-data"]));
  assert.equal(cert.validToDate.getTime() - cert.validFromDate.getTime(), 2 * 3600_000 + 10_000);
  assert.ok(cert.verify(new X509Certificate(clusterCA).publicKey));
});
