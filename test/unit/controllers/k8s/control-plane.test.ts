// The control plane's *Config resources and static pods against the pods Talos v1.7.6
// renders for the same machine config (test/fixtures/k8s/static-pods, written from
// Talos's controller), and the conditions under which they are rendered.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { controlPlaneConfigControllers } from "../../../../agent/src/controllers/k8s/control-plane-config.js";
import { ControlPlaneStaticPodController } from "../../../../agent/src/controllers/k8s/control-plane-static-pod.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  APIServerConfigType,
  ControllerManagerConfigType,
  ExtraManifestsConfigType,
  K8S_NAMESPACE,
  SchedulerConfigType,
  StaticPodType,
  apiServerConfigDefinition,
  staticPodDefinition,
  type StaticPodSpec,
} from "../../../../agent/src/resources/catalog/k8s-controlplane.js";
import {
  CONTROLPLANE_NAMESPACE,
  ConfigStatusType,
  SecretsStatusType,
  StaticPodConfigStatusId,
  StaticPodSecretsStatusId,
  type RenderStatusSpec,
} from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../../../agent/src/resources/catalog/runtime.js";
import { encodeSpec, yamlSpec } from "../../../../agent/src/resources/definitions.js";
import { decode } from "../../../../agent/src/api/index.js";
import { ControllerRuntime, type Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

const fixtures = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../../../test/fixtures/k8s/static-pods",
);
const fixture = (name: string) => readFileSync(path.join(fixtures, name), "utf8");
const configFixture = (name: string) => loadConfig(Buffer.from(fixture(name)));
const podIds = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"];

interface Node {
  state: ResourceState;
  runtime: ControllerRuntime;
  config: Observed<ConfigBundle | undefined>;
  failures: string[];
  etcd(spec: ServiceSpec | undefined): void;
  statuses(secrets: string | undefined, configFiles: string | undefined): void;
}

/** A controller whose failures are recorded. */
function observed(c: Controller, failures: string[]): Controller {
  return {
    name: c.name,
    inputs: c.inputs,
    outputs: c.outputs,
    ...(c.watchSources ? { watchSources: c.watchSources.bind(c) } : {}),
    reconcile: (ctx) =>
      c.reconcile(ctx).catch((err: Error) => {
        failures.push(`${err.name}: ${err.message}`);
        throw err;
      }),
  };
}

function node(t: TestContext, config: ConfigBundle): Node {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const active = new Observed<ConfigBundle | undefined>(config);
  const failures: string[] = [];
  for (const c of [
    new MachineConfigController(active),
    ...controlPlaneConfigControllers(),
    new ControlPlaneStaticPodController(),
  ]) {
    runtime.register(observed(c, failures));
  }
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  // Fakes of what the service supervisor and the Kubernetes secrets controllers publish.
  const put = <S>(ns: string, type: string, id: string, spec: S | undefined) => {
    if (spec === undefined) {
      if (state.get(ns, type, id)) state.destroy(ns, type, id, { owner: "fake" });
    } else state.modify<S>(ns, type, id, "fake", () => spec);
  };
  return {
    state,
    runtime,
    config: active,
    failures,
    etcd: (spec) => put(RUNTIME_NAMESPACE, ServiceType, "etcd", spec),
    statuses: (secrets, configFiles) => {
      put<RenderStatusSpec>(
        CONTROLPLANE_NAMESPACE,
        SecretsStatusType,
        StaticPodSecretsStatusId,
        secrets === undefined ? undefined : { ready: true, version: secrets },
      );
      put<RenderStatusSpec>(
        CONTROLPLANE_NAMESPACE,
        ConfigStatusType,
        StaticPodConfigStatusId,
        configFiles === undefined ? undefined : { ready: true, version: configFiles },
      );
    },
  };
}

const healthy: ServiceSpec = { running: true, healthy: true, unknown: false };
const pods = (n: Node) =>
  new Map(n.state.list<StaticPodSpec>(K8S_NAMESPACE, StaticPodType).map((r) => [r.metadata.id, r.spec.pod]));

for (const [configName, dir] of [
  ["controlplane.yaml", "default"],
  ["controlplane-custom.yaml", "custom"],
] as const) {
  test(`static pods for ${configName} are the pods Talos renders (${dir}/*.yaml), field by field`, async (t) => {
    const n = node(t, configFixture(configName));
    n.statuses("3", "2");
    n.etcd(healthy);
    await n.runtime.whenIdle();
    assert.deepEqual(n.failures, []);
    const rendered = pods(n);
    assert.deepEqual([...rendered.keys()].sort(), podIds);
    for (const id of podIds) {
      const expected = parse(fixture(`${dir}/${id}.yaml`)) as Record<string, unknown>;
      const pod = rendered.get(id) as Record<string, unknown>;
      // Field by field first, so a difference names its field.
      for (const key of Object.keys(expected)) assert.deepEqual(pod[key], expected[key], `${id}: .${key}`);
      assert.deepEqual(pod, expected, id);
      // The YAML Talos serves is the pod itself, keys sorted.
      const res = n.state.get<StaticPodSpec>(K8S_NAMESPACE, StaticPodType, id)!;
      assert.deepEqual(parse(yamlSpec(staticPodDefinition, res.spec)), expected);
    }
  });
}

test("nothing is rendered before etcd is healthy and the secrets and config files are written; pods go when etcd's service does", async (t) => {
  const n = node(t, configFixture("controlplane.yaml"));
  await n.runtime.whenIdle();
  assert.equal(
    n.state.list(CONTROLPLANE_NAMESPACE, APIServerConfigType).length,
    1,
    "the configs exist before the pods",
  );
  assert.equal(pods(n).size, 0);

  n.etcd({ running: true, healthy: false, unknown: false });
  n.statuses("3", "2");
  await n.runtime.whenIdle();
  assert.equal(pods(n).size, 0, "etcd not healthy");

  n.statuses(undefined, "2");
  n.etcd(healthy);
  await n.runtime.whenIdle();
  assert.equal(pods(n).size, 0, "secrets not written");

  n.statuses("3", "2");
  await n.runtime.whenIdle();
  assert.deepEqual([...pods(n).keys()].sort(), podIds);

  // Unhealthy again: the pods stay as they are.
  n.etcd({ running: true, healthy: false, unknown: false });
  await n.runtime.whenIdle();
  assert.equal(pods(n).size, 3);

  n.etcd(undefined);
  await n.runtime.whenIdle();
  assert.equal(pods(n).size, 0);
});

test("a new secrets version changes the pod's annotation; a config change bumps talos.dev/config-version", async (t) => {
  const n = node(t, configFixture("controlplane.yaml"));
  n.statuses("3", "2");
  n.etcd(healthy);
  await n.runtime.whenIdle();
  n.statuses("4", "2");
  await n.runtime.whenIdle();
  const annotations = (id: string) =>
    (pods(n).get(id)!.metadata as { annotations: Record<string, string> }).annotations;
  assert.deepEqual(annotations("kube-scheduler"), {
    "talos.dev/secrets-version": "4",
    "talos.dev/config-version": "1",
  });

  n.config.set(loadConfig(Buffer.from(fixture("controlplane.yaml").replace("10.96.0.0/12", "10.112.0.0/12"))));
  await n.runtime.whenIdle();
  assert.deepEqual(annotations("kube-apiserver"), {
    "talos.dev/secrets-version": "4",
    "talos.dev/config-file-version": "2",
    "talos.dev/config-version": "2",
  });
  assert.equal(annotations("kube-scheduler")["talos.dev/config-version"], "1", "the scheduler's config did not change");
});

test("disabled controller manager and scheduler have no pods", async (t) => {
  const text = fixture("controlplane.yaml").replace(
    "machine:\n",
    "machine:\n    controlPlane:\n        controllerManager:\n            disabled: true\n        scheduler:\n            disabled: true\n",
  );
  const n = node(t, loadConfig(Buffer.from(text)));
  n.statuses("3", "2");
  n.etcd(healthy);
  await n.runtime.whenIdle();
  assert.deepEqual([...pods(n).keys()], ["kube-apiserver"]);
  assert.equal(
    n.state.get<{ enabled: boolean }>(CONTROLPLANE_NAMESPACE, SchedulerConfigType, "kube-scheduler")?.spec.enabled,
    false,
  );
});

test("an extraArg Talos does not let the config override fails the render and names the flag", async (t) => {
  const text = fixture("controlplane.yaml").replace(
    "        image: registry.k8s.io/kube-apiserver:v1.30.3\n",
    "        image: registry.k8s.io/kube-apiserver:v1.30.3\n        extraArgs:\n            etcd-servers: https://10.0.0.1:2379\n",
  );
  const n = node(t, loadConfig(Buffer.from(text)));
  n.statuses("3", "2");
  n.etcd(healthy);
  await n.runtime.whenIdle();
  assert.deepEqual(n.failures, ['DeniedArgError: extra arg "etcd-servers" is not allowed']);
  assert.equal(pods(n).has("kube-apiserver"), false);
});

test("a worker has no control plane configs; a control plane that becomes a worker loses them", async (t) => {
  const n = node(t, configFixture("controlplane.yaml"));
  await n.runtime.whenIdle();
  const types = [APIServerConfigType, ControllerManagerConfigType, SchedulerConfigType, ExtraManifestsConfigType];
  assert.deepEqual(
    types.map((type) => n.state.list(CONTROLPLANE_NAMESPACE, type).length),
    [1, 1, 1, 1],
  );
  n.config.set(
    loadConfig(Buffer.from(fixture("controlplane.yaml").replace("    type: controlplane\n", "    type: worker\n"))),
  );
  await n.runtime.whenIdle();
  assert.deepEqual(
    types.map((type) => n.state.list(CONTROLPLANE_NAMESPACE, type).length),
    [0, 0, 0, 0],
  );
});

test("APIServerConfig of the custom config: fields, YAML as talosctl shows it, and the protobuf spec", async (t) => {
  const n = node(t, configFixture("controlplane-custom.yaml"));
  await n.runtime.whenIdle();
  const res = n.state.get(CONTROLPLANE_NAMESPACE, APIServerConfigType, "kube-apiserver")!;
  const spec = res.spec as never;
  assert.equal(
    yamlSpec(apiServerConfigDefinition, spec),
    [
      "image: registry.example.com/k8s/kube-apiserver:v1.30.3-custom",
      "cloudProvider: external",
      "controlPlaneEndpoint: https://10.5.0.2:6443",
      "etcdServers:",
      "    - https://localhost:2379",
      "localPort: 7443",
      "serviceCIDR:",
      "    - 10.96.0.0/12",
      "    - fd00:10:96::/112",
      "extraArgs:",
      '    audit-log-maxage: "7"',
      "    enable-admission-plugins: AlwaysPullImages,NodeRestriction",
      "    event-ttl: 2h0m0s",
      "    feature-gates: StructuredAuthenticationConfiguration=true",
      "    tls-cipher-suites: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256",
      "extraVolumes:",
      "    - name: etc-kubernetes-extra-config-d",
      "      hostPath: /var/lib/kube-extra",
      "      mountPath: /etc/kubernetes/extra_config.d",
      "      readonly: true",
      "environmentVariables:",
      "    BILLING_NOTE: costs $(5) per $HOUR",
      "    HTTP_PROXY: http://proxy.example.com:3128",
      "podSecurityPolicyEnabled: false",
      "advertisedAddress: $(POD_IP)",
      "resources:",
      "    requests:",
      '        cpu: "1"',
      "        memory: 1Gi",
      "    limits:",
      '        cpu: "2"',
      "        memory: 4Gi",
      "",
    ].join("\n"),
  );
  const decoded = decode(
    "talos.resource.definitions.k8s.APIServerConfigSpec",
    encodeSpec(apiServerConfigDefinition, spec),
  ) as Record<string, unknown>;
  assert.equal(decoded.local_port, 7443);
  assert.deepEqual(decoded.service_cid_rs, ["10.96.0.0/12", "fd00:10:96::/112"]);
  assert.deepEqual(decoded.extra_volumes, [
    {
      name: "etc-kubernetes-extra-config-d",
      host_path: "/var/lib/kube-extra",
      mount_path: "/etc/kubernetes/extra_config.d",
      read_only: true,
    },
  ]);
  assert.deepEqual(decoded.resources, { requests: { cpu: "1", memory: "1Gi" }, limits: { cpu: "2", memory: "4Gi" } });
});
