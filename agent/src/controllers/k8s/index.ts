// The kubelet's controllers: its configuration and spec, node name and IPs, its
// bootstrap secrets, and KubePrism.

import type { Controller } from "../../resources/controller-runtime.js";
import { KubeletConfigController } from "./kubelet-config.js";
import { KubeletSecretsController } from "./kubelet-secrets.js";
import { KubeletServiceController, type KubeletServiceControllerOptions } from "./kubelet-service.js";
import { KubeletSpecController } from "./kubelet-spec.js";
import { KubePrismConfigController } from "./kubeprism-config.js";
import { KubePrismEndpointsController } from "./kubeprism-endpoints.js";
import { KubePrismController } from "./kubeprism.js";
import { NodeIPConfigController } from "./nodeip-config.js";
import { NodeIPController } from "./nodeip.js";
import { NodenameController } from "./nodename.js";

export interface KubeletControllersOptions {
  /** machined runs in a container (the sandbox): kernel defaults are not the kubelet's to protect. */
  container: boolean;
  /**
   * Whether KubePrism listens (a node). The sandbox shares the host's loopback with other
   * sandboxes, where a second listener on the same port could only fail.
   */
  kubePrism: boolean;
  /** Starts and restarts the kubelet service (where machined runs it). */
  service?: KubeletServiceControllerOptions;
}

export function kubeletControllers(opts: KubeletControllersOptions): Controller[] {
  return [
    new NodenameController(),
    new NodeIPConfigController(),
    new NodeIPController(),
    new KubeletConfigController(),
    new KubeletSpecController({ container: opts.container }),
    new KubeletSecretsController(),
    new KubePrismEndpointsController(),
    new KubePrismConfigController(),
    ...(opts.kubePrism ? [new KubePrismController()] : []),
    ...(opts.service ? [new KubeletServiceController(opts.service)] : []),
  ];
}
