import { SystemError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  KernelParamDefaultSpecType,
  KernelParamSpecType,
  type KernelParamSpecSpec,
} from "../../resources/catalog/kernel-params.js";
import {
  KernelParamStatusType,
  RUNTIME_NAMESPACE,
  type KernelParamStatusSpec,
} from "../../resources/catalog/runtime.js";
import type { KernelParams } from "../../sys/kernel-params.js";

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException)?.code === "ENOENT";

/**
 * Writes the kernel parameters, the config's first and then the defaults it does not
 * override, and publishes KernelParamStatuses with the value written and the value found
 * before. A parameter no longer wanted gets its previous value back (or its file removed
 * when it had none) and loses its status, as Talos resets it.
 */
export class KernelParamSpecController implements Controller {
  readonly name = "runtime.KernelParamSpecController";
  readonly inputs = [
    { namespace: RUNTIME_NAMESPACE, type: KernelParamDefaultSpecType },
    { namespace: RUNTIME_NAMESPACE, type: KernelParamSpecType },
  ];
  readonly outputs = [{ type: KernelParamStatusType }];
  /** The value each parameter had before we first wrote it. */
  private readonly before = new Map<string, string>();
  /** What we wrote. */
  private readonly applied = new Map<string, string>();

  constructor(private readonly params: KernelParams) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const configured = ctx.list<KernelParamSpecSpec>(RUNTIME_NAMESPACE, KernelParamSpecType);
    const defaults = ctx.list<KernelParamSpecSpec>(RUNTIME_NAMESPACE, KernelParamDefaultSpecType);
    const touched = new Set<string>();
    const failures: string[] = [];
    for (const item of [...configured, ...defaults]) {
      const key = item.metadata.id;
      if (touched.has(key)) continue;
      try {
        await this.apply(ctx, key, item.spec.value);
        touched.add(key);
      } catch (err) {
        if (isMissing(err) && item.spec.ignoreErrors) {
          ctx.modify<KernelParamStatusSpec>(RUNTIME_NAMESPACE, KernelParamStatusType, key, (cur) => ({
            current: cur?.current ?? "",
            default: cur?.default ?? "",
            unsupported: true,
          }));
          touched.add(key);
        } else {
          failures.push(`${key}: ${(err as Error).message}`);
        }
      }
    }
    for (const key of [...this.applied.keys()]) {
      if (touched.has(key)) continue;
      try {
        await this.reset(ctx, key);
      } catch (err) {
        failures.push(`${key}: ${(err as Error).message}`);
      }
    }
    if (failures.length > 0) throw new SystemError(`applying kernel parameters: ${failures.join("; ")}`, { failures });
  }

  private async apply(ctx: ControllerContext, key: string, value: string): Promise<void> {
    if (!this.before.has(key)) {
      try {
        this.before.set(key, await this.params.read(key));
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    }
    await this.params.write(key, value);
    this.applied.set(key, value);
    const previous = (this.before.get(key) ?? "").trim();
    ctx.modify<KernelParamStatusSpec>(RUNTIME_NAMESPACE, KernelParamStatusType, key, () => ({
      current: value,
      default: previous,
      unsupported: false,
    }));
  }

  private async reset(ctx: ControllerContext, key: string): Promise<void> {
    const previous = this.before.get(key);
    if (previous !== undefined) await this.params.write(key, previous);
    else await this.params.remove(key);
    this.before.delete(key);
    this.applied.delete(key);
    ctx.destroy(RUNTIME_NAMESPACE, KernelParamStatusType, key);
  }
}
