import { SystemError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { KernelModuleSpecType, type KernelModuleSpecSpec } from "../../resources/catalog/kernel-modules.js";
import { RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import type { KernelModules } from "../../sys/kernel-modules.js";

/**
 * Loads every KernelModuleSpec's module with its parameters, at boot and whenever the
 * specs change. As Talos's, it never unloads a module whose spec went away, and one
 * module failing does not stop the others (the controller retries with backoff).
 */
export class KernelModuleSpecController implements Controller {
  readonly name = "runtime.KernelModuleSpecController";
  readonly inputs = [{ namespace: RUNTIME_NAMESPACE, type: KernelModuleSpecType }];
  readonly outputs = [];

  constructor(private readonly modules: KernelModules) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const failures: string[] = [];
    for (const item of ctx.list<KernelModuleSpecSpec>(RUNTIME_NAMESPACE, KernelModuleSpecType)) {
      try {
        await this.modules.load(item.spec.name, item.spec.parameters);
      } catch (err) {
        failures.push(`error loading module "${item.spec.name}": ${(err as Error).message}`);
      }
    }
    if (failures.length > 0) throw new SystemError(failures.join("; "), { failures });
  }
}
