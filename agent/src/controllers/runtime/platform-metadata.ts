import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  PlatformMetadataId,
  PlatformMetadataType,
  RUNTIME_NAMESPACE,
  type PlatformMetadataSpec,
} from "../../resources/catalog/runtime.js";
import type { Source } from "./source.js";

/** PlatformMetadata (runtime/platformmetadata): what the platform told machined about this machine. */
export class PlatformMetadataController implements Controller {
  readonly name = "runtime.PlatformMetadataController";
  readonly inputs = [];
  readonly outputs = [{ type: PlatformMetadataType }];

  constructor(private readonly metadata: Source<PlatformMetadataSpec | undefined>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.metadata.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const spec = this.metadata.get();
    if (spec) ctx.modify<PlatformMetadataSpec>(RUNTIME_NAMESPACE, PlatformMetadataType, PlatformMetadataId, () => spec);
    else ctx.destroyOthers(RUNTIME_NAMESPACE, PlatformMetadataType, new Set());
  }
}
