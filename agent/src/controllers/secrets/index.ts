import type { Controller } from "../../resources/controller-runtime.js";
import { APIController } from "./api.js";
import { APICertSANsController, type NodeIdentityFallback } from "./cert-sans.js";
import { MaintenanceCertSANsController, MaintenanceController, MaintenanceRootController } from "./maintenance.js";
import { RootController } from "./root.js";
import { TrustdController } from "./trustd.js";
import { KubernetesController, KubernetesDynamicCertsController } from "./kubernetes.js";
import { KubernetesCertSANsController } from "./kubernetes-cert-sans.js";
import { RenderSecretsStaticPodController } from "./kubernetes-render.js";
import { RenderConfigsStaticPodController } from "./kubernetes-config-files.js";
import { RootKubernetesController } from "./kubernetes-root.js";
import {
  ControlPlaneAdmissionControlController,
  ControlPlaneAuditPolicyController,
} from "./kubernetes-control-plane-configs.js";
import type { TrustdAttempt } from "./trustd-request.js";

export interface SecretsOptions {
  /** Where the node is reached when no network controller says (the sandbox). */
  fallback: NodeIdentityFallback;
  /** The address apid's listener is bound to, when it is bound to one (the sandbox): the maintenance certificate names it. */
  maintenanceListenAddresses: string[];
  /** One Certificate call to a control plane's trustd (a worker's API certificate). */
  callTrustd: TrustdAttempt;
  /** The system directory (/system on a node) the control plane's secret and config files are written below; absent: none are written. */
  systemDir?: string;
}

/** Every secrets controller, for machined's one registration list. */
export function secretsControllers(opts: SecretsOptions): Controller[] {
  return [
    new MaintenanceRootController(),
    new MaintenanceCertSANsController(opts.fallback, opts.maintenanceListenAddresses),
    new MaintenanceController(),
    new RootController(),
    new APICertSANsController(opts.fallback),
    new APIController({ attempt: opts.callTrustd }),
    new TrustdController(),
    new RootKubernetesController(),
    new KubernetesCertSANsController(opts.fallback),
    new KubernetesController(),
    new KubernetesDynamicCertsController(),
    new ControlPlaneAdmissionControlController(),
    new ControlPlaneAuditPolicyController(),
    ...(opts.systemDir
      ? [new RenderSecretsStaticPodController(opts.systemDir), new RenderConfigsStaticPodController(opts.systemDir)]
      : []),
  ];
}
