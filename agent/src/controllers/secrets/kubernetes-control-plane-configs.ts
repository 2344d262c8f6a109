import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  AdmissionControlConfigId,
  AdmissionControlConfigType,
  AuditPolicyConfigId,
  AuditPolicyConfigType,
  CONTROLPLANE_NAMESPACE,
  type AdmissionControlConfigSpec,
  type UnstructuredConfigSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { isControlPlane } from "./api.js";

/** kube-apiserver's audit policy when cluster.apiServer.auditPolicy is empty: every request at Metadata. */
export const defaultAuditPolicy: Record<string, unknown> = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  rules: [{ level: "Metadata" }],
};

const configInput = { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active };

/** cluster.apiServer of a control plane's active configuration; undefined elsewhere. */
function controlPlaneAPIServer(ctx: ControllerContext) {
  const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
  const doc = cfg?.v1alpha1WithDefaults();
  if (!doc?.machine || !doc.cluster || !isControlPlane(cfg?.machineType)) return undefined;
  return doc.cluster.apiServer ?? {};
}

/** AdmissionControlConfigs `admission-control`: cluster.apiServer.admissionControl on a control plane. */
export class ControlPlaneAdmissionControlController implements Controller {
  readonly name = "k8s.ControlPlaneAdmissionControlController";
  readonly inputs = [configInput];
  readonly outputs = [{ type: AdmissionControlConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const apiServer = controlPlaneAPIServer(ctx);
    if (!apiServer) {
      ctx.destroyOthers(CONTROLPLANE_NAMESPACE, AdmissionControlConfigType, new Set());
      return;
    }
    const config = (apiServer.admissionControl ?? []).map((p) => ({
      name: p.name ?? "",
      configuration: p.configuration ?? null,
    }));
    ctx.modify<AdmissionControlConfigSpec>(
      CONTROLPLANE_NAMESPACE,
      AdmissionControlConfigType,
      AdmissionControlConfigId,
      () => ({ config }),
    );
  }
}

/** AuditPolicyConfigs `audit-policy`: cluster.apiServer.auditPolicy, or the default policy when empty. */
export class ControlPlaneAuditPolicyController implements Controller {
  readonly name = "k8s.ControlPlaneAuditPolicyController";
  readonly inputs = [configInput];
  readonly outputs = [{ type: AuditPolicyConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const apiServer = controlPlaneAPIServer(ctx);
    if (!apiServer) {
      ctx.destroyOthers(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, new Set());
      return;
    }
    const policy =
      apiServer.auditPolicy && Object.keys(apiServer.auditPolicy).length > 0
        ? apiServer.auditPolicy
        : defaultAuditPolicy;
    ctx.modify<UnstructuredConfigSpec>(CONTROLPLANE_NAMESPACE, AuditPolicyConfigType, AuditPolicyConfigId, () => ({
      config: policy,
    }));
  }
}
