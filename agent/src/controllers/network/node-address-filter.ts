// k8s.AddressFilterController (Talos keeps it with the Kubernetes controllers): the
// NodeAddressFilters `no-k8s` (excludes the cluster's pod and service subnets) and
// `only-k8s` (keeps only them), from `.cluster.network` (Talos's defaults
// 10.244.0.0/16 and 10.96.0.0/12 when unset). None without a `cluster` section.

import type { ConfigBundle } from "../../config/bundle.js";
import { defaults } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  NETWORK_NAMESPACE,
  NodeAddressFilterIds,
  NodeAddressFilterType,
  type NodeAddressFilterSpec,
} from "../../resources/catalog/network.js";

export class NodeAddressFilterController implements Controller {
  readonly name = "k8s.AddressFilterController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodeAddressFilterType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cluster = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.cluster;
    const keep = new Set<string>();
    if (cluster) {
      const network = cluster.network;
      const pods = network?.podSubnets?.length ? network.podSubnets : defaults.podSubnets;
      const services = network?.serviceSubnets?.length ? network.serviceSubnets : defaults.serviceSubnets;
      const k8s = [...pods, ...services];
      ctx.modify<NodeAddressFilterSpec>(NETWORK_NAMESPACE, NodeAddressFilterType, NodeAddressFilterIds.noK8s, () => ({
        includeSubnets: [],
        excludeSubnets: k8s,
      }));
      ctx.modify<NodeAddressFilterSpec>(NETWORK_NAMESPACE, NodeAddressFilterType, NodeAddressFilterIds.onlyK8s, () => ({
        includeSubnets: k8s,
        excludeSubnets: [],
      }));
      keep.add(NodeAddressFilterIds.noK8s).add(NodeAddressFilterIds.onlyK8s);
    }
    ctx.destroyOthers(NETWORK_NAMESPACE, NodeAddressFilterType, keep);
  }
}
