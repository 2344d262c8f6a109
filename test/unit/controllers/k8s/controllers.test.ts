import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeletConfigController, kubeletConfigSpec } from "../../../../agent/src/controllers/k8s/kubelet-config.js";
import {
  KubeletExtraConfigError,
  renderKubeletConfiguration,
} from "../../../../agent/src/controllers/k8s/kubelet-configuration.js";
import {
  kubeletSecretsSpec,
  KubeletSecretsController,
  MissingKubernetesCAError,
} from "../../../../agent/src/controllers/k8s/kubelet-secrets.js";
import { KubeletArgDeniedError, kubeletArgs } from "../../../../agent/src/controllers/k8s/kubelet-spec.js";
import { KubePrismConfigController } from "../../../../agent/src/controllers/k8s/kubeprism-config.js";
import {
  endpointHostPort,
  KubePrismEndpointsController,
  kubePrismEndpoints,
} from "../../../../agent/src/controllers/k8s/kubeprism-endpoints.js";
import { nodeIPConfigSpec, NodeIPConfigController } from "../../../../agent/src/controllers/k8s/nodeip-config.js";
import { filterIPs, NodeIPController, onePerFamily } from "../../../../agent/src/controllers/k8s/nodeip.js";
import { NodenameController, nodenameFromHostname } from "../../../../agent/src/controllers/k8s/nodename.js";
import { nthAddress } from "../../../../agent/src/controllers/k8s/service-cidrs.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import type { V1Alpha1Config } from "../../../../agent/src/config/types/v1alpha1.js";
import { NodenameType, type NodenameSpec } from "../../../../agent/src/resources/catalog/cluster.js";
import {
  K8S_NAMESPACE,
  KubeletConfigType,
  KubeletId,
  KubeletSecretsType,
  KubePrismConfigId,
  KubePrismConfigType,
  KubePrismEndpointsId,
  KubePrismEndpointsType,
  NodeIPConfigType,
  NodeIPType,
  type KubeletConfigSpec,
  type KubeletSecretsSpec,
  type KubePrismConfigSpec,
  type KubePrismEndpointsSpec,
  type NodeIPConfigSpec,
  type NodeIPSpec,
} from "../../../../agent/src/resources/catalog/k8s-kubelet.js";
import { SECRETS_NAMESPACE } from "../../../../agent/src/resources/catalog/secrets.js";
import { until } from "../secrets/wait.js";
import { genConfigs, node, withPatch } from "./harness.js";

const doc = (yaml: string): V1Alpha1Config => loadConfig(yaml).v1alpha1()!;
const facts = { hostname: "Worker_1", domainname: "lab.example", routed: ["10.5.0.3/24"] };
const waitFor = <S>(
  state: { get<T>(ns: string, type: string, id: string): { spec: T } | undefined },
  ns: string,
  type: string,
  id: string,
  holds: (s: S) => boolean = () => true,
) =>
  until(`${type}(${id})`, () => {
    const s = state.get<S>(ns, type, id)?.spec;
    return s !== undefined && holds(s) ? s : undefined;
  });

test("Nodename: hostname made a node name, FQDN with registerWithFQDN, hostname version, skipNodeRegistration", async (t) => {
  assert.equal(nodenameFromHostname("-My_Host.Example.-"), "my-host.example");
  assert.equal(nodenameFromHostname("a!b c"), "abc");
  assert.throws(() => nodenameFromHostname("--"), /could not convert hostname "--" to a valid Kubernetes Node name/);

  const worker = (await genConfigs()).worker;
  const { state, setConfig } = node(t, worker, facts, [new NodenameController()]);
  const plain = await waitFor<NodenameSpec>(state, K8S_NAMESPACE, NodenameType, "nodename");
  const hostnameVersion = String(state.get("network", "HostnameStatuses.net.talos.dev", "hostname")!.metadata.version);
  assert.deepEqual(plain, { nodename: "worker-1", hostnameVersion, skipNodeRegistration: false });
  setConfig(withPatch(worker, "machine:\n  kubelet:\n    registerWithFQDN: true\n    skipNodeRegistration: true\n"));
  const fqdn = await waitFor<NodenameSpec>(
    state,
    K8S_NAMESPACE,
    NodenameType,
    "nodename",
    (s) => s.skipNodeRegistration,
  );
  assert.equal(fqdn.nodename, "worker-1.lab.example");
});

test("NodeIPConfig: valid subnets from the service subnets' families; pod, service and VIP subnets excluded", async (t) => {
  const worker = (await genConfigs()).worker;
  assert.deepEqual(nodeIPConfigSpec(doc(worker)), {
    validSubnets: ["0.0.0.0/0"],
    excludeSubnets: ["10.244.0.0/16", "10.96.0.0/12"],
  });
  const dual = withPatch(
    worker,
    [
      "machine:",
      "  network:",
      "    interfaces:",
      "      - interface: eth0",
      "        vip: { ip: 10.5.0.100 }",
      "        vlans: [{ vlanId: 10, vip: { ip: 10.6.0.100 } }]",
      "cluster:",
      "  network:",
      "    podSubnets: [10.244.0.0/16, fd00:10:244::/56]",
      "    serviceSubnets: [10.96.0.0/12, fd00:10:96::/112]",
      "",
    ].join("\n"),
  );
  assert.deepEqual(nodeIPConfigSpec(doc(dual)), {
    validSubnets: ["0.0.0.0/0", "::/0"],
    excludeSubnets: [
      "10.244.0.0/16",
      "fd00:10:244::/56",
      "10.96.0.0/12",
      "fd00:10:96::/112",
      "10.5.0.100",
      "10.6.0.100",
    ],
  });
  const { state } = node(t, worker, facts, [new NodeIPConfigController()]);
  assert.deepEqual(
    await waitFor<NodeIPConfigSpec>(state, K8S_NAMESPACE, NodeIPConfigType, KubeletId),
    nodeIPConfigSpec(doc(worker)),
  );
});

test("NodeIP: FilterIPs order (subnet by subnet, exclusions remove), one address per family", async (t) => {
  assert.deepEqual(filterIPs(["10.0.0.2", "192.168.1.5", "10.0.0.9"], ["192.168.0.0/16", "10.0.0.0/8", "!10.0.0.2"]), [
    "192.168.1.5",
    "10.0.0.9",
  ]);
  assert.deepEqual(filterIPs(["fd00::5", "10.0.0.2"], ["::/0", "10.0.0.2"]), ["fd00::5", "10.0.0.2"]);
  assert.deepEqual(onePerFamily(["10.0.0.1", "fd00::1", "10.0.0.2", "fd00::2"]), {
    picked: ["10.0.0.1", "fd00::1"],
    skipped: ["10.0.0.2", "fd00::2"],
  });

  const { state, runtime, setRouted } = node(
    t,
    (await genConfigs()).worker,
    { ...facts, routed: ["10.5.0.3/24", "10.5.0.4/24", "fd00::3/64"] },
    [new NodeIPConfigController(), new NodeIPController()],
  );
  assert.deepEqual(await waitFor<NodeIPSpec>(state, K8S_NAMESPACE, NodeIPType, KubeletId), { addresses: ["10.5.0.3"] });
  // Nothing suitable: the last NodeIP stays (Talos only warns).
  setRouted(["10.244.1.1/24"]);
  await runtime.whenIdle();
  assert.deepEqual(state.get<NodeIPSpec>(K8S_NAMESPACE, NodeIPType, KubeletId)?.spec, { addresses: ["10.5.0.3"] });
});

test("KubeletConfig: waits for the static pod server; clusterDNS the service subnet's 10th address unless given", async (t) => {
  assert.equal(nthAddress("10.96.0.0/12", 10), "10.96.0.10");
  assert.equal(nthAddress("10.96.7.0/12", 10), "10.96.0.10");
  assert.equal(nthAddress("fd00:10:96::/112", 10), "fd00:10:96::a");
  assert.throws(() => nthAddress("10.0.0.0/29", 10), /does not contain enough IPs/);

  const worker = (await genConfigs()).worker;
  const spec = kubeletConfigSpec(doc(worker), "http://127.0.0.1:1");
  assert.deepEqual(spec, {
    image: "ghcr.io/siderolabs/kubelet:v1.30.3",
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
  });
  const explicit = withPatch(
    worker,
    "machine:\n  kubelet:\n    clusterDNS: [169.254.2.53]\ncluster:\n  externalCloudProvider:\n    enabled: true\n",
  );
  assert.deepEqual(kubeletConfigSpec(doc(explicit), "").clusterDNS, ["169.254.2.53"]);
  assert.equal(kubeletConfigSpec(doc(explicit), "").cloudProviderExternal, true);

  const { state, runtime } = node(t, worker, facts, [new KubeletConfigController()]);
  await runtime.whenIdle();
  assert.equal(
    state.get(K8S_NAMESPACE, KubeletConfigType, KubeletId),
    undefined,
    "no KubeletConfig before the static pod server",
  );
  state.modify(
    K8S_NAMESPACE,
    "StaticPodServerStatuses.kubernetes.talos.dev",
    "static-pod-server-status",
    "test",
    () => ({ url: "http://127.0.0.1:9" }),
  );
  const made = await waitFor<KubeletConfigSpec>(state, K8S_NAMESPACE, KubeletConfigType, KubeletId);
  assert.equal(made.staticPodListURL, "http://127.0.0.1:9");
});

test("kubelet args: Talos's flags refused in extraArgs; skipNodeRegistration, external cloud provider, pre-1.27 kubelet", async () => {
  const base = kubeletConfigSpec(doc((await genConfigs()).worker), "");
  for (const flag of [
    "config",
    "cert-dir",
    "kubeconfig",
    "bootstrap-kubeconfig",
    "container-runtime",
    "container-runtime-endpoint",
  ]) {
    assert.throws(
      () => kubeletArgs({ config: { ...base, extraArgs: { [flag]: "x" } }, nodename: "n", nodeIPs: ["10.0.0.1"] }),
      (err: unknown) => {
        return err instanceof KubeletArgDeniedError && err.message === `extra arg "${flag}" is not allowed`;
      },
    );
  }
  const overridden = kubeletArgs({
    config: { ...base, extraArgs: { "hostname-override": "custom", "node-ip": "10.9.9.9" } },
    nodename: "n",
  });
  assert.equal(overridden.expectedNodename, "");
  assert.ok(overridden.args.includes("--hostname-override=custom") && overridden.args.includes("--node-ip=10.9.9.9"));

  const skip = {
    ...base,
    skipNodeRegistration: true,
    cloudProviderExternal: true,
    image: "ghcr.io/siderolabs/kubelet:v1.26.9",
  };
  assert.deepEqual(kubeletArgs({ config: skip, nodename: "n", nodeIPs: ["10.0.0.1"] }).args, [
    "--cert-dir=/var/lib/kubelet/pki",
    "--cloud-provider=external",
    "--config=/etc/kubernetes/kubelet.yaml",
    "--container-runtime-endpoint=/run/containerd/containerd.sock",
    "--hostname-override=n",
    "--node-ip=10.0.0.1",
  ]);
  const cfg = renderKubeletConfiguration(skip);
  assert.equal(cfg.containerRuntimeEndpoint, "");
  assert.deepEqual(cfg.authentication, {
    x509: { clientCAFile: "/etc/kubernetes/pki/ca.crt" },
    webhook: { enabled: false, cacheTTL: "0s" },
    anonymous: { enabled: false },
  });
  assert.equal((cfg.authorization as { mode: string }).mode, "AlwaysAllow");
  assert.equal(renderKubeletConfiguration(base, { container: true }).protectKernelDefaults, undefined);
});

test("extraConfig: protected fields, unknown fields and wrong types refused", async () => {
  const base = kubeletConfigSpec(doc((await genConfigs()).worker), "");
  assert.throws(
    () => renderKubeletConfiguration({ ...base, extraConfig: { port: 1, cgroupRoot: "/x" } }),
    (err: unknown) => {
      // Every protected field named, in Talos's list order.
      return (
        err instanceof KubeletExtraConfigError &&
        err.message === `field "cgroupRoot" can't be overridden; field "port" can't be overridden`
      );
    },
  );
  assert.throws(() => renderKubeletConfiguration({ ...base, extraConfig: { maxPodz: 1, cgroupsPerQoS: true } }), {
    message:
      'error unmarshalling extra kubelet configuration: strict decoding error: unknown field "cgroupsPerQoS", unknown field "maxPodz"',
  });
  assert.throws(
    () =>
      renderKubeletConfiguration({
        ...base,
        extraConfig: { logging: { verbosty: 2, options: { json: { bufferSize: 1 } } } },
      }),
    {
      message:
        'error unmarshalling extra kubelet configuration: strict decoding error: unknown field "logging.options.json.bufferSize", unknown field "logging.verbosty"',
    },
  );
  assert.throws(
    () =>
      renderKubeletConfiguration({
        ...base,
        extraConfig: { shutdownGracePeriodByPodPriority: [{ priority: 1, seconds: 2 }] },
      }),
    /unknown field "shutdownGracePeriodByPodPriority\[0\]\.seconds"/,
  );
  assert.throws(
    () => renderKubeletConfiguration({ ...base, extraConfig: { maxPods: "many" } }),
    /"maxPods": expected a number/,
  );
  assert.throws(
    () => renderKubeletConfiguration({ ...base, extraConfig: { syncFrequency: "soon" } }),
    /"syncFrequency": invalid duration/,
  );
  // A set logging format and flush frequency string are kept; the options stay complete.
  const logging = renderKubeletConfiguration({
    ...base,
    extraConfig: { logging: { format: "text", flushFrequency: "5s" } },
  }).logging;
  assert.deepEqual(logging, {
    format: "text",
    flushFrequency: "5s",
    verbosity: 0,
    options: { text: { infoBufferSize: "0" }, json: { infoBufferSize: "0" } },
  });
});

test("KubeletSecrets: KubePrism, the local API server or the cluster endpoint; the cluster CAs; the bootstrap token", async (t) => {
  const cfgs = await genConfigs();
  const worker = doc(cfgs.worker);
  const token = worker.cluster!.token!.split(".");
  const caPem = Buffer.from(worker.cluster!.ca!.crt!, "base64").toString();
  assert.deepEqual(kubeletSecretsSpec(worker), {
    endpoint: "https://127.0.0.1:7445",
    acceptedCAs: [caPem],
    bootstrapTokenID: token[0],
    bootstrapTokenSecret: token[1],
  });
  const noPrism = "machine:\n  features:\n    kubePrism:\n      enabled: false\n";
  assert.equal(kubeletSecretsSpec(doc(withPatch(cfgs.worker, noPrism))).endpoint, "https://10.9.0.1:6443");
  assert.equal(kubeletSecretsSpec(doc(withPatch(cfgs.controlplane, noPrism))).endpoint, "https://localhost:6443");
  const noCA = structuredClone(worker);
  delete noCA.cluster!.ca;
  assert.throws(() => kubeletSecretsSpec(noCA), MissingKubernetesCAError);

  const { state } = node(t, cfgs.worker, facts, [new KubeletSecretsController()]);
  const secrets = await waitFor<KubeletSecretsSpec>(state, SECRETS_NAMESPACE, KubeletSecretsType, KubeletId);
  assert.equal(secrets.endpoint, "https://127.0.0.1:7445");
});

test("KubePrism endpoints and config: cluster endpoint, localhost on a control plane, control-plane members; config only when enabled", async (t) => {
  assert.deepEqual(endpointHostPort("https://[fd00::1]:6443"), { host: "fd00::1", port: 6443 });
  assert.deepEqual(endpointHostPort("https://kube.example"), { host: "kube.example", port: 443 });
  const cfgs = await genConfigs();
  const members = [
    {
      nodeId: "a",
      addresses: ["10.5.0.10", "fd00::10"],
      hostname: "cp-a",
      machineType: "controlplane" as const,
      operatingSystem: "",
      controlPlane: { apiServerPort: 6443 },
    },
    { nodeId: "b", addresses: ["10.5.0.20"], hostname: "w-b", machineType: "worker" as const, operatingSystem: "" },
  ];
  assert.deepEqual(kubePrismEndpoints(doc(cfgs.controlplane), members), [
    { host: "10.9.0.1", port: 6443 },
    { host: "localhost", port: 6443 },
    { host: "10.5.0.10", port: 6443 },
    { host: "fd00::10", port: 6443 },
  ]);
  assert.deepEqual(kubePrismEndpoints(doc(cfgs.worker), []), [{ host: "10.9.0.1", port: 6443 }]);

  const { state, setConfig } = node(t, cfgs.worker, facts, [
    new KubePrismEndpointsController(),
    new KubePrismConfigController(),
  ]);
  const config = await waitFor<KubePrismConfigSpec>(state, K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId);
  assert.deepEqual(config, { host: "127.0.0.1", port: 7445, endpoints: [{ host: "10.9.0.1", port: 6443 }] });
  assert.deepEqual(
    state.get<KubePrismEndpointsSpec>(K8S_NAMESPACE, KubePrismEndpointsType, KubePrismEndpointsId)?.spec,
    { endpoints: [{ host: "10.9.0.1", port: 6443 }] },
  );
  setConfig(withPatch(cfgs.worker, "machine:\n  features:\n    kubePrism:\n      enabled: false\n"));
  await until("KubePrismConfig gone", () =>
    state.get(K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId) === undefined ? true : undefined,
  );
});
