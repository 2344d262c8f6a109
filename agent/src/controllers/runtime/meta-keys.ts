import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { MetaKeyType, metaKeyId, RUNTIME_NAMESPACE, type MetaKeySpec } from "../../resources/catalog/runtime.js";
import type { Source } from "./source.js";

/** MetaKeys resources (id 0x%02x) for the keys stored in META, following every load and write. */
export class MetaKeysController implements Controller {
  readonly name = "runtime.MetaKeysController";
  readonly inputs = [];
  readonly outputs = [{ type: MetaKeyType }];

  constructor(private readonly keys: Source<ReadonlyMap<number, string>>) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.keys.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const keys = this.keys.get();
    for (const [tag, value] of keys)
      ctx.modify<MetaKeySpec>(RUNTIME_NAMESPACE, MetaKeyType, metaKeyId(tag), () => ({ value }));
    ctx.destroyOthers(RUNTIME_NAMESPACE, MetaKeyType, new Set([...keys.keys()].map(metaKeyId)));
  }
}
