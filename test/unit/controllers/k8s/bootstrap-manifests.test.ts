// BootstrapManifestsConfig of a gen-config control plane config, as Talos v1.7.6's
// ControlPlaneBootstrapManifestsController computes it, and its YAML and protobuf.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { bootstrapManifestsConfig } from "../../../../agent/src/controllers/k8s/bootstrap-manifests-config.js";
import { controlPlaneConfig } from "../../../../agent/src/controllers/k8s/control-plane-config.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { decode } from "../../../../agent/src/api/index.js";
import { bootstrapManifestsConfigDefinition } from "../../../../agent/src/resources/catalog/k8s-controlplane.js";
import { encodeSpec, yamlSpec } from "../../../../agent/src/resources/definitions.js";

const fixtures = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../../../test/fixtures/k8s/static-pods",
);
const config = (name: string, edit: (s: string) => string = (s) => s) =>
  controlPlaneConfig(loadConfig(Buffer.from(edit(readFileSync(path.join(fixtures, name), "utf8")))))!;

test("BootstrapManifestsConfig of a gen-config control plane (KubePrism on, host DNS forwarding)", () => {
  const spec = bootstrapManifestsConfig(config("controlplane.yaml"), {
    enabled: true,
    serviceHostDNSAddress: "169.254.116.108",
  });
  assert.equal(
    yamlSpec(bootstrapManifestsConfigDefinition, spec),
    [
      "string: https://127.0.0.1:7445",
      "clusterDomain: cluster.local",
      "podCIDRs:",
      "    - 10.244.0.0/16",
      "proxyEnabled: true",
      "proxyImage: registry.k8s.io/kube-proxy:v1.30.3",
      "proxyArgs:",
      "    - --cluster-cidr=10.244.0.0/16",
      "    - --conntrack-max-per-core=0",
      "    - --hostname-override=$(NODE_NAME)",
      "    - --kubeconfig=/etc/kubernetes/kubeconfig",
      "    - --proxy-mode=iptables",
      "coreDNSEnabled: true",
      "coreDNSImage: registry.k8s.io/coredns/coredns:v1.11.1",
      "dnsServiceIP: 10.96.0.10",
      'dnsServiceIPv6: ""',
      "flannelEnabled: true",
      "flannelImage: ghcr.io/siderolabs/flannel:v0.25.3",
      "flannelCNIImage: ghcr.io/siderolabs/install-cni:v1.7.0-2-g7c627a8",
      "flannelExtraArgs: []",
      "flannelKubeServiceHost: 127.0.0.1",
      'flannelKubeServicePort: "7445"',
      "podSecurityPolicyEnabled: false",
      "talosAPIServiceEnabled: false",
      "serviceHostDNSAddress: 169.254.116.108",
      "",
    ].join("\n"),
  );
  const decoded = decode(
    "talos.resource.definitions.k8s.BootstrapManifestsConfigSpec",
    encodeSpec(bootstrapManifestsConfigDefinition, spec),
  );
  assert.equal(decoded.server, "https://127.0.0.1:7445");
  assert.equal(decoded.dns_service_ip, "10.96.0.10");
});

test("without KubePrism the server is the cluster endpoint; dual-stack gets an IPv6 DNS address; proxy extraArgs merge, kubeconfig is refused", () => {
  const spec = bootstrapManifestsConfig(
    config("controlplane-custom.yaml", (s) =>
      s
        .replace("            enabled: true\n            port: 7445\n", "            enabled: false\n")
        .replace("    proxy:\n", '    proxy:\n        mode: ipvs\n        extraArgs:\n            v: "4"\n'),
    ),
    undefined,
  );
  assert.equal(spec.server, "https://10.5.0.2:6443");
  assert.deepEqual([spec.dnsServiceIP, spec.dnsServiceIPv6], ["10.96.0.10", "fd00:10:96::a"]);
  assert.deepEqual(
    [spec.flannelKubeServiceHost, spec.flannelKubeServicePort, spec.serviceHostDNSAddress],
    ["", "", ""],
  );
  assert.deepEqual(spec.proxyArgs.slice(-2), ["--proxy-mode=ipvs", "--v=4"]);
  assert.throws(
    () =>
      bootstrapManifestsConfig(
        config("controlplane.yaml", (s) =>
          s.replace("    proxy:\n", "    proxy:\n        extraArgs:\n            kubeconfig: /x\n"),
        ),
        undefined,
      ),
    /extra arg "?kubeconfig"? is not allowed/,
  );
});
