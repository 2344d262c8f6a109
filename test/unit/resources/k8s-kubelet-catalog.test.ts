import assert from "node:assert/strict";
import { test } from "node:test";
import { decode } from "../../../agent/src/api/index.js";
import {
  kubeletConfigDefinition,
  kubeletSecretsDefinition,
  kubeletSpecDefinition,
  kubePrismConfigDefinition,
  kubePrismStatusesDefinition,
  nodeIPConfigDefinition,
  nodeIPDefinition,
  type KubeletSpecSpec,
  type Mount,
} from "../../../agent/src/resources/catalog/k8s-kubelet.js";
import { encodeSpec, yamlSpec } from "../../../agent/src/resources/definitions.js";

const mount: Mount = {
  destination: "/var/lib/example",
  type: "bind",
  source: "/var/lib/example",
  options: ["bind", "rshared", "rw"],
  uidMappings: [],
  gidMappings: [],
};
const spec: KubeletSpecSpec = {
  image: "ghcr.io/siderolabs/kubelet:v1.30.3",
  args: ["--cert-dir=/var/lib/kubelet/pki", "--node-ip=10.5.0.3"],
  extraMounts: [mount],
  expectedNodename: "worker-1",
  config: {
    port: 10250,
    kind: "KubeletConfiguration",
    authentication: { webhook: { enabled: true, cacheTTL: "0s" } },
    clusterDNS: ["10.96.0.10"],
    memorySwap: {},
  },
};

test("KubeletSpec: YAML as talosctl shows it (map keys sorted, specs.Mount's lower-case fields) and its proto Struct", () => {
  assert.equal(
    yamlSpec(kubeletSpecDefinition, spec),
    [
      "image: ghcr.io/siderolabs/kubelet:v1.30.3",
      "args:",
      "    - --cert-dir=/var/lib/kubelet/pki",
      "    - --node-ip=10.5.0.3",
      "extraMounts:",
      "    - destination: /var/lib/example",
      "      type: bind",
      "      source: /var/lib/example",
      "      options:",
      "        - bind",
      "        - rshared",
      "        - rw",
      "      uidmappings: []",
      "      gidmappings: []",
      "expectedNodename: worker-1",
      "config:",
      "    authentication:",
      "        webhook:",
      "            cacheTTL: 0s",
      "            enabled: true",
      "    clusterDNS:",
      "        - 10.96.0.10",
      "    kind: KubeletConfiguration",
      "    memorySwap: {}",
      "    port: 10250",
      "",
    ].join("\n"),
  );
  const wire = decode(kubeletSpecDefinition.protoSpecType, encodeSpec(kubeletSpecDefinition, spec));
  const config = wire.config as {
    fields: Record<
      string,
      { numberValue?: number; structValue?: unknown; listValue?: { values: { stringValue: string }[] } }
    >;
  };
  assert.equal(config.fields.port!.numberValue, 10250);
  assert.equal(config.fields.clusterDNS!.listValue!.values[0]!.stringValue, "10.96.0.10");
  assert.equal((wire.extra_mounts as { destination: string }[])[0]!.destination, "/var/lib/example");
  assert.equal(wire.expected_nodename, "worker-1");
});

test("KubeletConfig, NodeIPConfig, NodeIP, KubePrism and KubeletSecrets encode for the wire; omitempty fields as Talos's YAML omits them", () => {
  const cfg = {
    image: "i",
    clusterDNS: ["10.96.0.10"],
    clusterDomain: "cluster.local",
    extraArgs: {},
    extraMounts: [],
    cloudProviderExternal: false,
    defaultRuntimeSeccompEnabled: true,
    skipNodeRegistration: false,
    staticPodListURL: "http://127.0.0.1:1",
    disableManifestsDirectory: true,
    enableFSQuotaMonitoring: true,
  };
  assert.equal(
    yamlSpec(kubeletConfigDefinition, cfg),
    "image: i\nclusterDNS:\n    - 10.96.0.10\nclusterDomain: cluster.local\ncloudProviderExternal: false\ndefaultRuntimeSeccompEnabled: true\nskipNodeRegistration: false\nstaticPodListURL: http://127.0.0.1:1\ndisableManifestsDirectory: true\nenableFSQuotaMonitoring: true\n",
  );
  assert.equal(
    decode(
      kubeletConfigDefinition.protoSpecType,
      encodeSpec(kubeletConfigDefinition, { ...cfg, extraConfig: { maxPods: 250 } }),
    ).static_pod_list_url,
    "http://127.0.0.1:1",
  );
  assert.equal(
    yamlSpec(nodeIPConfigDefinition, { validSubnets: [], excludeSubnets: ["10.244.0.0/16"] }),
    "excludeSubnets:\n    - 10.244.0.0/16\n",
  );
  assert.deepEqual(
    decode(nodeIPDefinition.protoSpecType, encodeSpec(nodeIPDefinition, { addresses: ["10.5.0.3"] })).addresses,
    [{ ip: Buffer.from([10, 5, 0, 3]) }],
  );
  assert.equal(
    yamlSpec(kubePrismStatusesDefinition, { host: "127.0.0.1:7445", healthy: true }),
    "host: 127.0.0.1:7445\nhealthy: true\n",
  );
  assert.deepEqual(
    decode(
      kubePrismConfigDefinition.protoSpecType,
      encodeSpec(kubePrismConfigDefinition, {
        host: "127.0.0.1",
        port: 7445,
        endpoints: [{ host: "10.9.0.1", port: 6443 }],
      }),
    ),
    {
      host: "127.0.0.1",
      port: 7445,
      endpoints: [{ host: "10.9.0.1", port: 6443 }],
    },
  );
  const secrets = decode(
    kubeletSecretsDefinition.protoSpecType,
    encodeSpec(kubeletSecretsDefinition, {
      endpoint: "https://127.0.0.1:7445",
      acceptedCAs: ["PEM"],
      bootstrapTokenID: "abc",
      bootstrapTokenSecret: "def",
    }),
  );
  assert.deepEqual(secrets.endpoint, { full_path: "https://127.0.0.1:7445" });
  assert.equal(kubeletSecretsDefinition.sensitive, true);
});

test("KubeletSecrets YAML: the endpoint as yaml.v3 marshals a *url.URL, the CAs base64, the token", () => {
  assert.equal(
    yamlSpec(kubeletSecretsDefinition, {
      endpoint: "https://127.0.0.1:7445",
      acceptedCAs: ["PEM\n"],
      bootstrapTokenID: "abc",
      bootstrapTokenSecret: "def",
    }),
    [
      "endpoint:",
      "    scheme: https",
      '    opaque: ""',
      "    user: null",
      "    host: 127.0.0.1:7445",
      '    path: ""',
      '    rawpath: ""',
      "    omithost: false",
      "    forcequery: false",
      '    rawquery: ""',
      '    fragment: ""',
      '    rawfragment: ""',
      "acceptedCAs:",
      "    - crt: UEVNCg==",
      "bootstrapTokenID: abc",
      "bootstrapTokenSecret: def",
      "",
    ].join("\n"),
  );
});
