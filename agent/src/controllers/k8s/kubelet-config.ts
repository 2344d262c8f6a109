// k8s.KubeletConfigController: KubeletConfig `kubelet` from `.machine.kubelet`, the
// cluster's network and the static pod server's URL (StaticPodServerStatus, which
// another controller publishes; until it exists nothing is written, as in Talos).

import type { ConfigBundle } from "../../config/bundle.js";
import type { ExtraMount, V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { defaults } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  K8S_NAMESPACE,
  KubeletConfigType,
  KubeletId,
  StaticPodServerStatusId,
  StaticPodServerStatusType,
  type KubeletConfigSpec,
  type Mount,
  type StaticPodServerStatusSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import { nthAddress } from "./service-cidrs.js";

/** The service subnets Talos assumes when `.cluster.network.serviceSubnets` is empty. */
export function serviceCIDRs(doc: V1Alpha1Config): string[] {
  const subnets = doc.cluster?.network?.serviceSubnets ?? [];
  return subnets.length ? subnets : [...defaults.serviceSubnets];
}

const idMappings = (m: ExtraMount["uidMappings"]) =>
  (m ?? []).map((x) => ({ containerID: x.containerID ?? 0, hostID: x.hostID ?? 0, size: x.size ?? 0 }));

export function extraMounts(mounts: ExtraMount[] | undefined): Mount[] {
  return (mounts ?? []).map((m) => ({
    destination: m.destination ?? "",
    type: m.type ?? "",
    source: m.source ?? "",
    options: m.options ?? [],
    uidMappings: idMappings(m.uidMappings),
    gidMappings: idMappings(m.gidMappings),
  }));
}

/** KubeletConfig's spec for a v1alpha1 document that has both `machine` and `cluster`. */
export function kubeletConfigSpec(doc: V1Alpha1Config, staticPodListURL: string): KubeletConfigSpec {
  const kubelet = doc.machine?.kubelet ?? {};
  const clusterDNS = kubelet.clusterDNS?.length
    ? kubelet.clusterDNS
    : serviceCIDRs(doc).map((cidr) => nthAddress(cidr, 10));
  return {
    image: kubelet.image || defaults.kubeletImage,
    clusterDNS,
    clusterDomain: doc.cluster?.network?.dnsDomain || defaults.dnsDomain,
    extraArgs: { ...(kubelet.extraArgs ?? {}) },
    extraMounts: extraMounts(kubelet.extraMounts),
    ...(kubelet.extraConfig ? { extraConfig: kubelet.extraConfig } : {}),
    cloudProviderExternal: doc.cluster?.externalCloudProvider?.enabled === true,
    defaultRuntimeSeccompEnabled: kubelet.defaultRuntimeSeccompProfileEnabled === true,
    skipNodeRegistration: kubelet.skipNodeRegistration === true,
    staticPodListURL,
    disableManifestsDirectory: kubelet.disableManifestsDirectory === true,
    enableFSQuotaMonitoring: doc.machine?.features?.diskQuotaSupport === true,
    ...(kubelet.credentialProviderConfig ? { credentialProviderConfig: kubelet.credentialProviderConfig } : {}),
  };
}

export class KubeletConfigController implements Controller {
  readonly name = "k8s.KubeletConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: StaticPodServerStatusType, id: StaticPodServerStatusId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubeletConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    if (!doc?.machine || !doc.cluster) {
      ctx.destroyOthers(K8S_NAMESPACE, KubeletConfigType, new Set());
      return;
    }
    const staticPods = ctx.get<StaticPodServerStatusSpec>(
      K8S_NAMESPACE,
      StaticPodServerStatusType,
      StaticPodServerStatusId,
    )?.spec;
    if (!staticPods) return;
    const spec = kubeletConfigSpec(doc, staticPods.url);
    ctx.modify<KubeletConfigSpec>(K8S_NAMESPACE, KubeletConfigType, KubeletId, () => spec);
  }
}
