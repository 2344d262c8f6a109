import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { MountStatusType, RUNTIME_NAMESPACE, type MountStatusSpec } from "../../resources/catalog/runtime.js";
import type { MountedVolume } from "../../storage/volumes.js";
import type { Source } from "./source.js";

/** MountStatus resources (id = volume name: STATE, EPHEMERAL) for the system volumes the mount tasks have mounted. */
export class MountStatusController implements Controller {
  readonly name = "runtime.MountStatusController";
  readonly inputs = [];
  readonly outputs = [{ type: MountStatusType }];

  constructor(private readonly volumes: Source<ReadonlyMap<string, MountedVolume>>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.volumes.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const volumes = this.volumes.get();
    for (const v of volumes.values()) {
      ctx.modify<MountStatusSpec>(RUNTIME_NAMESPACE, MountStatusType, v.name, () => ({
        source: v.source,
        target: v.target,
        filesystemType: v.fstype,
        encrypted: false,
      }));
    }
    ctx.destroyOthers(RUNTIME_NAMESPACE, MountStatusType, new Set(volumes.keys()));
  }
}
