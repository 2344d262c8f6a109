import { InvalidInputError } from "../../errors.js";
import { defaultKubernetesVersion, kubeletImageRepository, kubernetesImageRegistry } from "./constants.js";

/** "1.30.3" or "v1.30.3" -> "1.30.3". */
export function normalizeKubernetesVersion(version: string | undefined): string {
  const v = (version ?? "").trim().replace(/^v/, "");
  if (v === "") return defaultKubernetesVersion;
  if (!/^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/.test(v)) {
    throw new InvalidInputError(`invalid Kubernetes version ${JSON.stringify(version)}: expected e.g. 1.30.3`);
  }
  return v;
}

export interface KubernetesImages {
  kubelet: string;
  apiServer: string;
  controllerManager: string;
  scheduler: string;
  proxy: string;
}

export function kubernetesImages(version: string): KubernetesImages {
  const tag = `v${version}`;
  return {
    kubelet: `${kubeletImageRepository}:${tag}`,
    apiServer: `${kubernetesImageRegistry}/kube-apiserver:${tag}`,
    controllerManager: `${kubernetesImageRegistry}/kube-controller-manager:${tag}`,
    scheduler: `${kubernetesImageRegistry}/kube-scheduler:${tag}`,
    proxy: `${kubernetesImageRegistry}/kube-proxy:${tag}`,
  };
}
