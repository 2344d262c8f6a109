import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { KernelParamSpecType, type KernelParamSpecSpec } from "../../resources/catalog/kernel-params.js";
import { RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";

/** KernelParamSpecs from `.machine.sysctls` ("proc.sys.<key>") and `.machine.sysfs` ("sys.<key>") of the active config. */
export class KernelParamConfigController implements Controller {
  readonly name = "runtime.KernelParamConfigController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: KernelParamSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const machine = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine;
    const wanted = new Map<string, string>();
    for (const [key, value] of Object.entries(machine?.sysctls ?? {})) wanted.set(`proc.sys.${key}`, value);
    for (const [key, value] of Object.entries(machine?.sysfs ?? {})) wanted.set(`sys.${key}`, value);
    for (const [id, value] of wanted)
      ctx.modify<KernelParamSpecSpec>(RUNTIME_NAMESPACE, KernelParamSpecType, id, () => ({
        value,
        ignoreErrors: false,
      }));
    ctx.destroyOthers(RUNTIME_NAMESPACE, KernelParamSpecType, new Set(wanted.keys()));
  }
}
