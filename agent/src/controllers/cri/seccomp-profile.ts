import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { CRI_NAMESPACE, SeccompProfileType, type SeccompProfileSpec } from "../../resources/catalog/cri.js";

/** SeccompProfiles from `.machine.seccompProfiles` of the active config, one per profile name. */
export class SeccompProfileController implements Controller {
  readonly name = "cri.SeccompProfileController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: SeccompProfileType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const config = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active);
    // Without a config Talos leaves what it made before in place.
    if (!config) return;
    const wanted = new Set<string>();
    for (const profile of config.spec.v1alpha1()?.machine?.seccompProfiles ?? []) {
      if (profile.name === undefined) continue;
      const spec: SeccompProfileSpec = { name: profile.name, value: profile.value ?? {} };
      ctx.modify<SeccompProfileSpec>(CRI_NAMESPACE, SeccompProfileType, profile.name, () => spec);
      wanted.add(profile.name);
    }
    ctx.destroyOthers(CRI_NAMESPACE, SeccompProfileType, wanted);
  }
}
