// k8s.ManifestController: a control plane's bootstrap manifests (Manifests in
// `controlplane`, one per Talos manifest id) rendered from the machine config and
// HostDNSConfig; none on other nodes or without a cluster section.

import type { ConfigBundle } from "../../config/bundle.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
  type MachineTypeSpec,
} from "../../resources/catalog/config.js";
import { HostDNSConfigId, HostDNSConfigType, type HostDNSConfigSpec } from "../../resources/catalog/hostdns.js";
import { CONTROLPLANE_NAMESPACE, ManifestType, type ManifestSpec } from "../../resources/catalog/k8s-manifests.js";
import { NETWORK_NAMESPACE } from "../../resources/catalog/network.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { bootstrapManifestsInput } from "./manifest-input.js";
import { renderBootstrapManifests } from "./manifest-templates.js";

/** The config of a control plane (init or controlplane), else undefined. */
export function controlPlaneConfig(ctx: ControllerContext): ConfigBundle | undefined {
  const type = ctx.get<MachineTypeSpec>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;
  if (type !== "init" && type !== "controlplane") return undefined;
  return ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
}

export class ManifestController implements Controller {
  readonly name = "k8s.ManifestController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostDNSConfigType, id: HostDNSConfigId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: ManifestType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const config = controlPlaneConfig(ctx)?.v1alpha1();
    const hostDNS = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
    const input = config && bootstrapManifestsInput(config, hostDNS?.serviceHostDNSAddress ?? "");
    const keep = new Set<string>();
    for (const m of input ? renderBootstrapManifests(input) : []) {
      ctx.modify<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType, m.id, () => ({ items: m.objects }));
      keep.add(m.id);
    }
    ctx.destroyOthers(CONTROLPLANE_NAMESPACE, ManifestType, keep);
  }
}
