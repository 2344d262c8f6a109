import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import type { Source } from "../runtime/source.js";

/**
 * MachineConfig `v1alpha1` from the configuration this boot runs with (loaded from STATE,
 * received in maintenance mode, applied or tried): the one writer of the active config.
 */
export class MachineConfigController implements Controller {
  readonly name = "config.MachineConfigController";
  readonly inputs = [];
  readonly outputs = [{ type: MachineConfigType }];

  constructor(private readonly active: Source<ConfigBundle | undefined>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.active.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const bundle = this.active.get();
    if (bundle === undefined) {
      ctx.destroyOthers(CONFIG_NAMESPACE, MachineConfigType, new Set());
      return;
    }
    ctx.modify<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, () => bundle);
  }
}
