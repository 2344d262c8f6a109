// The bootstrap manifests compared object by object with Talos v1.7.6's rendering of its
// templates for the same inputs (test/fixtures/k8s/manifests, see its README).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { bootstrapManifestsInput, proxyArgs } from "../../../../agent/src/controllers/k8s/manifest-input.js";
import { nthAddress } from "../../../../agent/src/controllers/k8s/service-cidrs.js";
import { renderBootstrapManifests } from "../../../../agent/src/controllers/k8s/manifest-templates.js";
import { parseManifestYaml } from "../../../../agent/src/controllers/k8s/manifest-yaml.js";
import type { V1Alpha1Config } from "../../../../agent/src/config/types/v1alpha1.js";

const fixtures = path.resolve(import.meta.dirname, "../../../../../test/fixtures/k8s/manifests");

export const genConfig: V1Alpha1Config = {
  machine: { type: "controlplane", features: { kubePrism: { enabled: true, port: 7445 }, hostDNS: { enabled: true } } },
  cluster: {
    controlPlane: { endpoint: "https://10.5.0.2:6443" },
    clusterName: "basalt",
    network: { dnsDomain: "cluster.local", podSubnets: ["10.244.0.0/16"], serviceSubnets: ["10.96.0.0/12"] },
    token: "3xpfxm.8sa7xd2dc4kf5xyq",
    apiServer: { disablePodSecurityPolicy: true },
  },
};

const variant: V1Alpha1Config = {
  machine: {
    type: "controlplane",
    features: { kubernetesTalosAPIAccess: { enabled: true }, hostDNS: { enabled: true, forwardKubeDNSToHost: true } },
  },
  cluster: {
    controlPlane: { endpoint: "https://10.5.0.2:6443" },
    network: {
      dnsDomain: "example.org",
      podSubnets: ["10.244.0.0/16", "fd00:10:244::/56"],
      serviceSubnets: ["10.96.0.0/12", "fd00:10:96::/112"],
      cni: { name: "flannel", flannel: { extraArgs: ["--iface-can-reach=192.168.1.1"] } },
    },
    token: "3xpfxm.8sa7xd2dc4kf5xyq",
    proxy: { mode: "ipvs", extraArgs: { "metrics-bind-address": "0.0.0.0:10249" } },
    coreDNS: { image: "registry.example.org/coredns:v1.11.3" },
  },
};

function compareWithFixtures(dir: string, config: V1Alpha1Config, hostDNS = ""): void {
  const rendered = renderBootstrapManifests(bootstrapManifestsInput(config, hostDNS)!);
  const expectedIds = readdirSync(path.join(fixtures, dir))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => f.slice(0, -5))
    .sort();
  assert.deepEqual(rendered.map((m) => m.id).sort(), expectedIds);
  for (const m of rendered) {
    const expected = parseManifestYaml(readFileSync(path.join(fixtures, dir, `${m.id}.yaml`), "utf8"));
    assert.equal(m.objects.length, expected.length, `${m.id}: object count`);
    m.objects.forEach((obj, i) =>
      assert.deepEqual(obj, expected[i], `${m.id}: object ${i} (${String(expected[i]!.kind)})`),
    );
  }
}

test("a gen-config-shaped control plane renders Talos's nine bootstrap manifests, object by object", () => {
  compareWithFixtures("gen-config", genConfig);
});

test("dual stack, ipvs, flannel args, PSP, Talos API access and host DNS forwarding render as Talos's templates do", () => {
  compareWithFixtures("variant", variant, "10.96.0.9");
});

test("cni none, proxy and CoreDNS disabled leave their manifests out; a custom CNI is not flannel", () => {
  const ids = (c: V1Alpha1Config) => renderBootstrapManifests(bootstrapManifestsInput(c)!).map((m) => m.id);
  const off: V1Alpha1Config = {
    ...genConfig,
    cluster: {
      ...genConfig.cluster,
      network: { cni: { name: "none" } },
      proxy: { disabled: true },
      coreDNS: { disabled: true },
    },
  };
  assert.deepEqual(ids(off), [
    "00-kubelet-bootstrapping-token",
    "01-csr-node-bootstrap",
    "01-csr-approver-role-binding",
    "01-csr-renewal-role-binding",
    "11-kube-config-in-cluster",
  ]);
  const custom: V1Alpha1Config = {
    ...genConfig,
    cluster: { ...genConfig.cluster, network: { cni: { name: "custom", urls: ["http://x/cni.yaml"] } } },
  };
  assert.ok(!ids(custom).includes("05-flannel"));
  assert.equal(bootstrapManifestsInput({ machine: { type: "controlplane" } }), undefined);
});

test("addresses and kube-proxy flags as Talos computes them", () => {
  assert.equal(nthAddress("10.96.0.0/12", 10), "10.96.0.10");
  assert.equal(nthAddress("10.96.3.7/12", 10), "10.96.0.10");
  assert.equal(nthAddress("fd00:10:96::/112", 10), "fd00:10:96::a");
  assert.deepEqual(proxyArgs(["10.244.0.0/16"], "", { "proxy-mode": "nftables" }), [
    "--cluster-cidr=10.244.0.0/16",
    "--conntrack-max-per-core=0",
    "--hostname-override=$(NODE_NAME)",
    "--kubeconfig=/etc/kubernetes/kubeconfig",
    "--proxy-mode=nftables",
  ]);
  assert.throws(() => proxyArgs([], "", { kubeconfig: "/x" }), /kubeconfig is not allowed/);
});

test("manifest text: comment-only documents skipped, Lists unwrapped", () => {
  const objs = parseManifestYaml(
    "# only a comment\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: a}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
  );
  assert.deepEqual(
    objs.map((o) => (o.metadata as { name: string }).name),
    ["a", "b", "c"],
  );
});
