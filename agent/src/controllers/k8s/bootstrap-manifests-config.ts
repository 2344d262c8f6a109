// BootstrapManifestsConfig from the machine config of a control plane node, published
// as Talos's ControlPlaneBootstrapManifestsController publishes it (`talosctl get
// bootstrapmanifestsconfigs`); computed by the bootstrap manifests' own input
// (manifest-input.ts), less the bootstrap token, which Talos keeps elsewhere.

import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { HostDNSConfigId, HostDNSConfigType, type HostDNSConfigSpec } from "../../resources/catalog/hostdns.js";
import {
  BootstrapManifestsConfigId,
  BootstrapManifestsConfigType,
  type BootstrapManifestsConfigSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import { CONTROLPLANE_NAMESPACE } from "../../resources/catalog/k8s-secrets.js";
import { controlPlaneConfig, type ControlPlaneConfig } from "./control-plane-config.js";
import { bootstrapManifestsInput } from "./manifest-input.js";

const NETWORK_NAMESPACE = "network";

export function bootstrapManifestsConfig(
  cfg: ControlPlaneConfig,
  hostDNS: HostDNSConfigSpec | undefined,
): BootstrapManifestsConfigSpec {
  // A control plane config has its cluster section, so there is always an input.
  const {
    bootstrapTokenId: _id,
    bootstrapTokenSecret: _secret,
    ...spec
  } = bootstrapManifestsInput(cfg, hostDNS?.serviceHostDNSAddress ?? "")!;
  return spec;
}

export class ControlPlaneBootstrapManifestsController implements Controller {
  readonly name = "k8s.ControlPlaneBootstrapManifestsController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostDNSConfigType, id: HostDNSConfigId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: BootstrapManifestsConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = controlPlaneConfig(
      ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
    );
    if (cfg) {
      const hostDNS = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
      const spec = bootstrapManifestsConfig(cfg, hostDNS);
      ctx.modify<BootstrapManifestsConfigSpec>(
        CONTROLPLANE_NAMESPACE,
        BootstrapManifestsConfigType,
        BootstrapManifestsConfigId,
        () => spec,
      );
    }
    ctx.destroyOthers(
      CONTROLPLANE_NAMESPACE,
      BootstrapManifestsConfigType,
      new Set(cfg ? [BootstrapManifestsConfigId] : []),
    );
  }
}
