import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../resources/catalog/runtime.js";
import type { ServiceStatus } from "../../services/service.js";

/** What the controller reads from the supervisor. */
export interface ServiceStatuses {
  list(): ServiceStatus[];
  onChange(listener: () => void): () => void;
}

/** Service resources mirroring the supervisor's services (running, healthy, unknown), as Talos's v1alpha1.ServiceController. */
export class ServiceController implements Controller {
  readonly name = "v1alpha1.ServiceController";
  readonly inputs = [];
  readonly outputs = [{ type: ServiceType }];

  constructor(private readonly services: ServiceStatuses) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    const off = this.services.onChange(trigger);
    signal.addEventListener("abort", off, { once: true });
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const statuses = this.services.list();
    for (const s of statuses) {
      const spec: ServiceSpec = {
        running: s.state === "Running",
        healthy: s.health.healthy,
        unknown: s.health.unknown,
      };
      ctx.modify<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, s.id, () => spec);
    }
    ctx.destroyOthers(RUNTIME_NAMESPACE, ServiceType, new Set(statuses.map((s) => s.id)));
  }
}
