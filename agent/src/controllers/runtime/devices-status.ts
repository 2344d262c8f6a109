// runtime.DevicesStatusController: DevicesStatus `devices` turns ready once udevd is healthy,
// whose first health check triggers every device and settles, so network links carry their
// final (predictable) names by then. Ready stays true for the rest of the run, as in Talos.
// Where machined runs without udevd (the sandbox, Talos's container mode) it is ready at once.

import type { Controller, ControllerContext, ControllerInput } from "../../resources/controller-runtime.js";
import {
  DevicesStatusId,
  DevicesStatusType,
  type DevicesStatusSpec,
  RUNTIME_NAMESPACE,
  ServiceType,
  type ServiceSpec,
} from "../../resources/catalog/runtime.js";

export class DevicesStatusController implements Controller {
  readonly name = "runtime.DevicesStatusController";
  readonly inputs: readonly ControllerInput[];
  readonly outputs = [{ type: DevicesStatusType }];

  /** udevd: whether machined runs udevd (a node); false: the devices are the host's, ready at once. */
  constructor(private readonly opts: { udevd: boolean }) {
    this.inputs = opts.udevd ? [{ namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "udevd", kind: "weak" }] : [];
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (ctx.get<DevicesStatusSpec>(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId)?.spec.ready) return;
    if (this.opts.udevd && !ctx.get<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, "udevd")?.spec.healthy) return;
    ctx.log.info("devices are ready");
    ctx.modify<DevicesStatusSpec>(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, () => ({ ready: true }));
  }
}

/** The input a controller held until the devices are ready declares (Talos's WaitForDevicesReady). */
export const devicesStatusInput: ControllerInput = {
  namespace: RUNTIME_NAMESPACE,
  type: DevicesStatusType,
  id: DevicesStatusId,
  kind: "weak",
};

/** Whether udev has named and settled the devices: links may be renamed until then, so none may be brought up. */
export function devicesReady(ctx: Pick<ControllerContext, "get">): boolean {
  return ctx.get<DevicesStatusSpec>(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId)?.spec.ready === true;
}
