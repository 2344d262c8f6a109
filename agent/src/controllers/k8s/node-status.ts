// k8s.NodeStatusController: NodeStatus (id = the node name) from this node's Node object
// as the API server has it: readiness (the Ready condition True), cordon, labels and
// annotations. The Node is watched with the kubelet's kubeconfig once the kubelet has
// written it, as Talos does on every machine type; none while registration is skipped.

import type { Logger } from "../../log.js";
import { NodenameType, type NodenameSpec } from "../../resources/catalog/cluster.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import { NodeStatusType, type NodeStatusSpec } from "../../resources/catalog/k8s-nodes.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { kubeletConstants } from "./kubelet-configuration.js";
import { readKubeletCredentials } from "./kubelet-kubeconfig.js";
import { NodenameId } from "./nodename.js";
import type { KubeNode } from "./node-patch.js";
import { NodeWatcher } from "./node-watch.js";

export interface NodeStatusOptions {
  /** The kubelet's kubeconfig; default Talos's path. */
  kubeletKubeconfig?: string;
  /** How often to look again for the kubelet's kubeconfig before it exists. */
  kubeconfigPollMs?: number;
}

interface NodeCondition {
  type: string;
  status: string;
}

export function nodeStatusSpec(node: KubeNode): NodeStatusSpec {
  const conditions = ((node.status as { conditions?: NodeCondition[] } | undefined)?.conditions ?? []).filter(
    (c) => c.type === "Ready",
  );
  return {
    nodename: node.metadata.name,
    nodeReady: conditions.at(-1)?.status === "True",
    unschedulable: node.spec?.unschedulable === true,
    labels: node.metadata.labels ?? {},
    annotations: node.metadata.annotations ?? {},
  };
}

export class NodeStatusController implements Controller {
  readonly name = "k8s.NodeStatusController";
  readonly inputs = [{ namespace: K8S_NAMESPACE, type: NodenameType, id: NodenameId, kind: "weak" as const }];
  readonly outputs = [{ type: NodeStatusType }];
  private readonly kubeletKubeconfig: string;
  private readonly kubeconfigPollMs: number;
  private watcher: NodeWatcher | undefined;
  private trigger: () => void = () => undefined;

  constructor(opts: NodeStatusOptions = {}) {
    this.kubeletKubeconfig = opts.kubeletKubeconfig ?? kubeletConstants.kubeconfig;
    this.kubeconfigPollMs = opts.kubeconfigPollMs ?? 5_000;
  }

  /** The watched Node is this controller's outside input: each change of it runs reconcile. */
  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.trigger = trigger;
    signal.addEventListener("abort", () => this.stopWatch(), { once: true });
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const nodename = ctx.get<NodenameSpec>(K8S_NAMESPACE, NodenameType, NodenameId)?.spec;
    if (!nodename || nodename.skipNodeRegistration) {
      this.stopWatch();
      ctx.destroyOthers(K8S_NAMESPACE, NodeStatusType, new Set());
      return;
    }
    if (this.watcher?.nodename !== nodename.nodename) {
      this.stopWatch();
      if (!(await this.startWatch(nodename.nodename, ctx.log))) {
        ctx.requeueAfter(this.kubeconfigPollMs);
        return;
      }
    }
    const node = this.watcher?.node;
    if (node) ctx.modify<NodeStatusSpec>(K8S_NAMESPACE, NodeStatusType, node.metadata.name, () => nodeStatusSpec(node));
    ctx.destroyOthers(K8S_NAMESPACE, NodeStatusType, new Set(node ? [node.metadata.name] : []));
  }

  /** Starts watching with the kubelet's credentials; false while the kubelet has not written them. */
  private async startWatch(nodename: string, log: Logger): Promise<boolean> {
    const creds = await readKubeletCredentials(this.kubeletKubeconfig);
    if (!creds) return false;
    this.watcher = new NodeWatcher(nodename, creds, () => this.trigger(), log);
    return true;
  }

  private stopWatch(): void {
    this.watcher?.stop();
    this.watcher = undefined;
  }
}
