import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { KernelModuleSpecType, type KernelModuleSpecSpec } from "../../resources/catalog/kernel-modules.js";
import { RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";

/** KernelModuleSpecs from `.machine.kernel.modules` of the active config, one per module name. */
export class KernelModuleConfigController implements Controller {
  readonly name = "runtime.KernelModuleConfigController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: KernelModuleSpecType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const machine = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine;
    const wanted = new Set<string>();
    for (const module of machine?.kernel?.modules ?? []) {
      if (!module.name) continue;
      const spec: KernelModuleSpecSpec = { name: module.name, parameters: [...(module.parameters ?? [])] };
      ctx.modify<KernelModuleSpecSpec>(RUNTIME_NAMESPACE, KernelModuleSpecType, module.name, () => spec);
      wanted.add(module.name);
    }
    ctx.destroyOthers(RUNTIME_NAMESPACE, KernelModuleSpecType, wanted);
  }
}
