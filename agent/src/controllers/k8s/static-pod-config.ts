// StaticPods from `.machine.pods` of the active config, id `<namespace>-<name>`
// (namespace "default" when the pod names none). Talos's StaticPodConfigController.

import type { ConfigBundle } from "../../config/bundle.js";
import { InvalidInputError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { K8S_NAMESPACE, StaticPodType, type StaticPodSpec } from "../../resources/catalog/k8s-controlplane.js";

export class StaticPodConfigController implements Controller {
  readonly name = "k8s.StaticPodConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: StaticPodType, kind: "shared" as const }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const pods =
      ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()?.machine
        ?.pods ?? [];
    const ids = new Set<string>();
    for (const pod of pods) {
      // A pod of the config is unstructured: metadata is checked field by field below.
      const metadata = pod.metadata as { name?: unknown; namespace?: unknown } | undefined;
      if (typeof metadata?.name !== "string") throw new InvalidInputError("name is missing in static pod metadata");
      const namespace = typeof metadata.namespace === "string" ? metadata.namespace : "default";
      const id = `${namespace}-${metadata.name}`;
      ctx.modify<StaticPodSpec>(K8S_NAMESPACE, StaticPodType, id, () => ({ pod: structuredClone(pod) }));
      ids.add(id);
    }
    ctx.destroyOthers(K8S_NAMESPACE, StaticPodType, ids);
  }
}
