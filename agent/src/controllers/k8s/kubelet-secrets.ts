// secrets.KubeletController: KubeletSecrets `kubelet`, what the kubelet's bootstrap
// kubeconfig holds — the API server it bootstraps against (KubePrism when enabled,
// else this node's API server on a control plane, else the cluster endpoint), the
// Kubernetes CAs it trusts and the bootstrap token.

import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { defaults } from "../../config/defaults.js";
import { BasaltError } from "../../errors.js";
import { pemFromBase64 } from "../../pki/pem.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { KubeletId, KubeletSecretsType, type KubeletSecretsSpec } from "../../resources/catalog/k8s-kubelet.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";

/** The configuration names no Kubernetes CA the kubelet could trust. */
export class MissingKubernetesCAError extends BasaltError {}

/** A bootstrap token "id.secret" split as Talos splits it (anything else: both empty). */
function tokenParts(token: string | undefined): { id: string; secret: string } {
  const parts = (token ?? "").split(".");
  return parts.length === 2 ? { id: parts[0]!, secret: parts[1]! } : { id: "", secret: "" };
}

export function kubeletSecretsSpec(doc: V1Alpha1Config): KubeletSecretsSpec {
  const machine = doc.machine ?? {};
  const cluster = doc.cluster ?? {};
  const prism = machine.features?.kubePrism;
  const controlPlane = machine.type === "init" || machine.type === "controlplane";
  let endpoint: string;
  if (prism?.enabled === true) endpoint = `https://127.0.0.1:${prism.port || defaults.kubePrismPort}`;
  else if (controlPlane)
    endpoint = `https://localhost:${cluster.controlPlane?.localAPIServerPort || defaults.localAPIServerPort}`;
  else endpoint = cluster.controlPlane?.endpoint ?? "";
  const acceptedCAs = [
    ...(cluster.ca ? [pemFromBase64(cluster.ca.crt)] : []),
    ...(cluster.acceptedCAs ?? []).map((c) => pemFromBase64(c.crt)),
  ];
  if (acceptedCAs.length === 0) throw new MissingKubernetesCAError("missing accepted Kubernetes CAs");
  const token = tokenParts(cluster.token);
  return { endpoint, acceptedCAs, bootstrapTokenID: token.id, bootstrapTokenSecret: token.secret };
}

export class KubeletSecretsController implements Controller {
  readonly name = "secrets.KubeletController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubeletSecretsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    if (!doc?.machine || !doc.cluster) {
      ctx.destroyOthers(SECRETS_NAMESPACE, KubeletSecretsType, new Set());
      return;
    }
    const spec = kubeletSecretsSpec(doc);
    ctx.modify<KubeletSecretsSpec>(SECRETS_NAMESPACE, KubeletSecretsType, KubeletId, () => spec);
  }
}
