// The static control plane's controllers, in the order Talos registers them.

import type { Controller } from "../../resources/controller-runtime.js";
import { ControlPlaneBootstrapManifestsController } from "./bootstrap-manifests-config.js";
import { controlPlaneConfigControllers } from "./control-plane-config.js";
import { ControlPlaneStaticPodController } from "./control-plane-static-pod.js";
import { KubeletStaticPodController } from "./kubelet-static-pod.js";
import { StaticPodConfigController } from "./static-pod-config.js";
import { StaticPodServerController } from "./static-pod-server.js";

export function controlPlaneControllers(): Controller[] {
  return [
    ...controlPlaneConfigControllers(),
    new ControlPlaneBootstrapManifestsController(),
    new ControlPlaneStaticPodController(),
    new KubeletStaticPodController(),
    new StaticPodConfigController(),
    new StaticPodServerController(),
  ];
}
