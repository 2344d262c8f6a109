// The control plane's config files against what Kubernetes' own serializer writes for the
// same input (test/fixtures/k8s-config-files, rendered with k8s.io/apimachinery v0.30.3),
// and the files' places, modes and owners.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import {
  admissionControlConfigYaml,
  auditPolicyYaml,
  RenderConfigsStaticPodController,
  SchedulerConfigId,
  SchedulerConfigType,
  schedulerConfigYaml,
} from "../../../../agent/src/controllers/secrets/kubernetes-config-files.js";
import {
  ControlPlaneAdmissionControlController,
  ControlPlaneAuditPolicyController,
} from "../../../../agent/src/controllers/secrets/kubernetes-control-plane-configs.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
} from "../../../../agent/src/resources/catalog/config.js";
import { InvalidInputError } from "../../../../agent/src/errors.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { decode } from "../../../../agent/src/api/index.js";
import { encodeSpec } from "../../../../agent/src/resources/definitions.js";
import {
  admissionControlConfigDefinition,
  AdmissionControlConfigId,
  AdmissionControlConfigType,
  auditPolicyConfigDefinition,
  AuditPolicyConfigId,
  AuditPolicyConfigType,
  CONTROLPLANE_NAMESPACE,
  ConfigStatusType,
  StaticPodConfigStatusId,
  type AdmissionControlConfigSpec,
  type RenderStatusSpec,
  type UnstructuredConfigSpec,
} from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { fixture, repoRoot } from "../../config/fixtures.js";
import { until } from "./wait.js";

const fixtures = path.join(repoRoot, "test", "fixtures", "k8s-config-files");

interface CaseInput {
  admission: AdmissionControlConfigSpec["config"];
  audit: Record<string, unknown>;
  scheduler: Record<string, unknown>;
}

const input = (name: string) => parse(readFileSync(path.join(fixtures, name, "input.yaml"), "utf8")) as CaseInput;
const expected = (name: string, file: string) => readFileSync(path.join(fixtures, name, file), "utf8");

for (const name of ["base", "custom", "edges"]) {
  test(`${name}: admission control, audit policy and scheduler config as Kubernetes writes them`, () => {
    const c = input(name);
    assert.equal(admissionControlConfigYaml({ config: c.admission }), expected(name, "admission-control-config.yaml"));
    assert.equal(auditPolicyYaml({ config: c.audit }), expected(name, "auditpolicy.yaml"));
    assert.equal(schedulerConfigYaml({ config: c.scheduler }), expected(name, "scheduler-config.yaml"));
  });
}

test("the audit policy is decoded strictly: an unknown field is refused", () => {
  assert.throws(
    () =>
      auditPolicyYaml({
        config: { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "None", verb: ["get"] }] },
      }),
    (err: unknown) => err instanceof InvalidInputError && /rules\[0\]\.verb: unknown field/.test(err.message),
  );
});

test("RenderConfigsStaticPodController writes the files 0400 for their component and reports ConfigStatuses ready", async (t) => {
  const systemDir = mkdtempSync(path.join(os.tmpdir(), "basalt-k8s-configs-"));
  t.after(() => rmSync(systemDir, { recursive: true, force: true }));
  const state = new ResourceState();
  registerCatalog(state);
  const c = input("base");
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new RenderConfigsStaticPodController(systemDir));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const put = (type: string, id: string, spec: object) =>
    state.modify(CONTROLPLANE_NAMESPACE, type, id, "test.ControlPlane", () => spec);
  put(AdmissionControlConfigType, AdmissionControlConfigId, { config: c.admission });
  put(AuditPolicyConfigType, AuditPolicyConfigId, { config: c.audit });
  put(SchedulerConfigType, SchedulerConfigId, { config: c.scheduler });
  const status = await until(
    "ConfigStatuses static-pods",
    () => state.get<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, ConfigStatusType, StaticPodConfigStatusId)?.spec,
  );
  assert.deepEqual(status, { ready: true, version: "111" });
  const files: [string, number, string][] = [
    ["config/kubernetes/kube-apiserver/admission-control-config.yaml", 65534, "admission-control-config.yaml"],
    ["config/kubernetes/kube-apiserver/auditpolicy.yaml", 65534, "auditpolicy.yaml"],
    ["config/kubernetes/kube-scheduler/scheduler-config.yaml", 65536, "scheduler-config.yaml"],
  ];
  for (const [rel, owner, fixture] of files) {
    const st = statSync(path.join(systemDir, rel));
    assert.deepEqual([st.mode & 0o7777, st.uid, st.gid], [0o400, owner, owner], rel);
    assert.equal(readFileSync(path.join(systemDir, rel), "utf8"), expected("base", fixture), rel);
    assert.equal(statSync(path.dirname(path.join(systemDir, rel))).mode & 0o7777, 0o755);
  }
});

test("admission control and audit policy resources from gen config's control plane; the default policy when none is set", async (t) => {
  const controlPlane = fixture("types/v1alpha1/stability/v1.7/base-controlplane.yaml");
  const state = new ResourceState();
  registerCatalog(state);
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(controlPlane),
  );
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new ControlPlaneAdmissionControlController());
  runtime.register(new ControlPlaneAuditPolicyController());
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const admission = await until(
    "AdmissionControlConfigs",
    () =>
      state.get<AdmissionControlConfigSpec>(
        CONTROLPLANE_NAMESPACE,
        AdmissionControlConfigType,
        AdmissionControlConfigId,
      )?.spec,
  );
  // The fixture's plugins are the base case's input, whose rendering Kubernetes' serializer wrote.
  assert.deepEqual(admission.config, input("base").admission);
  assert.equal(admissionControlConfigYaml(admission), expected("base", "admission-control-config.yaml"));
  const audit = await until(
    "AuditPolicyConfigs",
    () => state.get<UnstructuredConfigSpec>(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, AuditPolicyConfigId)?.spec,
  );
  assert.equal(auditPolicyYaml(audit), expected("base", "auditpolicy.yaml"));

  // A policy of one's own, then none: Talos's default (every request at Metadata).
  const auditOf = () =>
    state.get<UnstructuredConfigSpec>(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, AuditPolicyConfigId)?.spec;
  const withPolicy = controlPlane.replace("                - level: Metadata\n", "                - level: None\n");
  const withoutPolicy = controlPlane.replace(/\n {8}auditPolicy:\n(?: {12}.*\n)+/, "\n");
  assert.equal(loadConfig(withoutPolicy).v1alpha1()!.cluster!.apiServer!.auditPolicy, undefined);
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(withPolicy),
  );
  await until("the policy of one's own", () =>
    JSON.stringify(auditOf()?.config?.["rules"]) === '[{"level":"None"}]' ? true : undefined,
  );
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(withoutPolicy),
  );
  const fallback = await until("the default audit policy", () =>
    JSON.stringify(auditOf()?.config?.["rules"]) === '[{"level":"Metadata"}]' ? auditOf() : undefined,
  );
  assert.deepEqual(fallback.config, { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] });
  assert.equal(auditPolicyYaml(fallback), expected("base", "auditpolicy.yaml"));

  // A worker has neither.
  state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
    loadConfig(fixture("types/v1alpha1/stability/v1.7/base-worker.yaml")),
  );
  await until("no AdmissionControlConfigs", () =>
    state.get(CONTROLPLANE_NAMESPACE, AdmissionControlConfigType, AdmissionControlConfigId) ? undefined : true,
  );
  await until("no AuditPolicyConfigs", () =>
    state.get(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, AuditPolicyConfigId) ? undefined : true,
  );
});

test("the admission and audit specs travel as google.protobuf.Struct", () => {
  const c = input("custom");
  const admission = decode(
    admissionControlConfigDefinition.protoSpecType,
    encodeSpec(admissionControlConfigDefinition, { config: c.admission }),
  );
  const plugins = admission["config"] as {
    name: string;
    configuration?: { fields: Record<string, Record<string, unknown>> };
  }[];
  assert.deepEqual(
    plugins.map((p) => p.name),
    ["EventRateLimit", "NoConfig"],
  );
  // The decoder names each Value's set member in `kind` (its oneof).
  assert.deepEqual(plugins[0]!.configuration!.fields["kind"], { stringValue: "Configuration", kind: "stringValue" });
  const limit = (
    plugins[0]!.configuration!.fields["limits"] as {
      listValue: { values: { structValue: { fields: Record<string, unknown> } }[] };
    }
  ).listValue.values[0]!.structValue.fields;
  assert.deepEqual(
    [limit["qps"], limit["type"]],
    [
      { numberValue: 50, kind: "numberValue" },
      { stringValue: "Namespace", kind: "stringValue" },
    ],
  );
  assert.equal(plugins[1]!.configuration ?? null, null, "a plugin without configuration has none on the wire");
  const audit = decode(
    auditPolicyConfigDefinition.protoSpecType,
    encodeSpec(auditPolicyConfigDefinition, { config: c.audit }),
  ) as { config: { fields: Record<string, unknown> } };
  assert.deepEqual(audit.config.fields["omitStages"], {
    listValue: { values: [{ stringValue: "RequestReceived", kind: "stringValue" }] },
    kind: "listValue",
  });
});
