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
  AdmissionControlConfigId,
  AdmissionControlConfigType,
  admissionControlConfigYaml,
  AuditPolicyConfigId,
  AuditPolicyConfigType,
  auditPolicyYaml,
  RenderConfigsStaticPodController,
  SchedulerConfigId,
  SchedulerConfigType,
  schedulerConfigYaml,
  type AdmissionControlConfigSpec,
} from "../../../../agent/src/controllers/secrets/kubernetes-config-files.js";
import { InvalidInputError } from "../../../../agent/src/errors.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { CONTROLPLANE_NAMESPACE, ConfigStatusType, StaticPodConfigStatusId, type RenderStatusSpec } from "../../../../agent/src/resources/catalog/k8s-secrets.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { repoRoot } from "../../config/fixtures.js";
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
  assert.throws(() => auditPolicyYaml({ config: { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "None", verb: ["get"] }] } }), (err: unknown) => err instanceof InvalidInputError && /rules\[0\]\.verb: unknown field/.test(err.message));
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
  const put = (type: string, id: string, spec: object) => state.modify(CONTROLPLANE_NAMESPACE, type, id, "test.ControlPlane", () => spec);
  put(AdmissionControlConfigType, AdmissionControlConfigId, { config: c.admission });
  put(AuditPolicyConfigType, AuditPolicyConfigId, { config: c.audit });
  put(SchedulerConfigType, SchedulerConfigId, { config: c.scheduler });
  const status = await until("ConfigStatuses static-pods", () => state.get<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, ConfigStatusType, StaticPodConfigStatusId)?.spec);
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
