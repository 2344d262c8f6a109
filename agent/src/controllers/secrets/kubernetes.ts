import { kubernetesCertLifetimeMs } from "../../pki/lifetimes.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  KubernetesCertSANsId,
  KubernetesDynamicCertsId,
  KubernetesDynamicCertsType,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  KubernetesSecretsId,
  KubernetesSecretsType,
  type KubernetesCertsSpec,
  type KubernetesDynamicCertsSpec,
  type KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { RUNTIME_NAMESPACE, TimeStatusType, type TimeStatusSpec } from "../../resources/catalog/runtime.js";
import { CertSANType, SECRETS_NAMESPACE, type CertSANSpec } from "../../resources/catalog/secrets.js";

/** Talos renews the 1-year Kubernetes certificates at half-life. */
export const kubernetesRenewMs = kubernetesCertLifetimeMs / 2;

const timeStatusInput = { namespace: RUNTIME_NAMESPACE, type: TimeStatusType, id: "node", kind: "weak" as const };
const rootInput = {
  namespace: SECRETS_NAMESPACE,
  type: KubernetesRootSecretsType,
  id: KubernetesRootSecretsId,
  kind: "weak" as const,
};

/** Certificates depend on the clock: nothing is issued before the time is synchronized. */
const timeSynced = (ctx: ControllerContext) =>
  ctx.get<TimeStatusSpec>(RUNTIME_NAMESPACE, TimeStatusType, "node")?.spec.synced === true;

// Node timers hold at most 2^31-1 ms: a longer wait wakes daily and finds the certificates still fresh.
const longestWaitMs = 24 * 3600_000;

/** Issues again when what the certificates are issued from changes, or at half-life. */
class RenewalClock {
  private issued: { key: string; at: number } | undefined;
  constructor(private readonly now: () => number) {}

  /** True when `key` was issued less than half a lifetime ago; then asks to be woken at half-life. */
  fresh(ctx: ControllerContext, key: string): boolean {
    if (this.issued?.key !== key || this.now() >= this.issued.at + kubernetesRenewMs) return false;
    ctx.requeueAfter(Math.min(this.issued.at + kubernetesRenewMs - this.now(), longestWaitMs));
    return true;
  }

  record(ctx: ControllerContext, key: string): void {
    this.issued = { key, at: this.now() };
    ctx.requeueAfter(Math.min(kubernetesRenewMs, longestWaitMs));
  }

  forget(): void {
    this.issued = undefined;
  }
}

/**
 * KubernetesSecrets `k8s-certs` (Talos's KubernetesController): the controller manager's
 * and the scheduler's kubeconfigs through the local endpoint, and Talos's own talos:admin
 * kubeconfigs through the cluster and the local endpoint, all from the cluster CA.
 */
export class KubernetesController implements Controller {
  readonly name = "secrets.KubernetesController";
  readonly inputs = [rootInput, timeStatusInput];
  readonly outputs = [{ type: KubernetesSecretsType }];
  private readonly renewal: RenewalClock;

  constructor(now: () => number = Date.now) {
    this.renewal = new RenewalClock(now);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<KubernetesRootSpec>(
      SECRETS_NAMESPACE,
      KubernetesRootSecretsType,
      KubernetesRootSecretsId,
    )?.spec;
    if (!root) {
      this.renewal.forget();
      ctx.destroyOthers(SECRETS_NAMESPACE, KubernetesSecretsType, new Set());
      return;
    }
    if (!timeSynced(ctx)) return;
    if (!root.issuingCA) {
      ctx.log.error("no Kubernetes kubeconfigs: cluster.ca has no key");
      return;
    }
    const key = JSON.stringify(root);
    if (ctx.get(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId) && this.renewal.fresh(ctx, key)) return;
    // @peculiar/x509 loads with the first issue on a control plane, not on every machined start.
    const { issueControlPlaneKubeconfigs } = await import("./kubernetes-issue.js");
    const spec = await issueControlPlaneKubeconfigs(root, root.issuingCA);
    ctx.modify<KubernetesCertsSpec>(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId, () => spec);
    this.renewal.record(ctx, key);
  }
}

/**
 * KubernetesDynamicCerts `k8s-dynamic-certs` (Talos's KubernetesDynamicCertsController):
 * kube-apiserver's serving certificate for CertSANs `k8s`, its kubelet client
 * certificate, and the front proxy's client certificate from the aggregator CA.
 */
export class KubernetesDynamicCertsController implements Controller {
  readonly name = "secrets.KubernetesDynamicCertsController";
  readonly inputs = [
    rootInput,
    timeStatusInput,
    { namespace: SECRETS_NAMESPACE, type: CertSANType, id: KubernetesCertSANsId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubernetesDynamicCertsType }];
  private readonly renewal: RenewalClock;

  constructor(now: () => number = Date.now) {
    this.renewal = new RenewalClock(now);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<KubernetesRootSpec>(
      SECRETS_NAMESPACE,
      KubernetesRootSecretsType,
      KubernetesRootSecretsId,
    )?.spec;
    if (!root) {
      this.renewal.forget();
      ctx.destroyOthers(SECRETS_NAMESPACE, KubernetesDynamicCertsType, new Set());
      return;
    }
    const sans = ctx.get<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, KubernetesCertSANsId)?.spec;
    if (!timeSynced(ctx) || !sans) return;
    if (!root.issuingCA) {
      ctx.log.error("no kube-apiserver certificates: cluster.ca has no key");
      return;
    }
    const key = JSON.stringify({ issuingCA: root.issuingCA, aggregatorCA: root.aggregatorCA, sans });
    if (
      ctx.get(SECRETS_NAMESPACE, KubernetesDynamicCertsType, KubernetesDynamicCertsId) &&
      this.renewal.fresh(ctx, key)
    )
      return;
    const { issueDynamicCerts } = await import("./kubernetes-issue.js");
    const spec = await issueDynamicCerts(root.issuingCA, root.aggregatorCA, sans);
    ctx.modify<KubernetesDynamicCertsSpec>(
      SECRETS_NAMESPACE,
      KubernetesDynamicCertsType,
      KubernetesDynamicCertsId,
      () => spec,
    );
    this.renewal.record(ctx, key);
  }
}
