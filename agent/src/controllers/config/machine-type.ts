import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
  type MachineTypeName,
} from "../../resources/catalog/config.js";

/** MachineType from the active configuration ("join" and "" read as worker, as Talos reads them). */
export class MachineTypeController implements Controller {
  readonly name = "config.MachineTypeController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: MachineTypeType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const type: MachineTypeName | undefined = cfg?.machineType;
    if (type === undefined) {
      ctx.destroyOthers(CONFIG_NAMESPACE, MachineTypeType, new Set());
      return;
    }
    ctx.modify<MachineTypeName>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId, () => type);
  }
}
