// k8s.NodeApplyController: puts the NodeLabelSpecs, NodeTaintSpecs and NodeCordonedSpec
// on this node's Kubernetes Node (node-patch.ts says how) through the API server: a
// control plane as the cluster admin (a certificate issued for the run,
// admin-credentials.ts), a worker with the kubelet's own kubeconfig once the kubelet has
// written it. A read and a replace at the version read; a conflict or a refusal is
// retried for 10 s, as Talos does. A Node not registered yet fails the run, and the
// runtime retries it with backoff (NodeStatus, when it changes, runs it again at once).

import { BasaltError } from "../../errors.js";
import type { Logger } from "../../log.js";
import { NodenameType, type NodenameSpec } from "../../resources/catalog/cluster.js";
import { CONFIG_NAMESPACE, MachineTypeId, MachineTypeType } from "../../resources/catalog/config.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import {
  NodeCordonedSpecType,
  NodeLabelSpecType,
  NodeStatusType,
  NodeTaintSpecType,
  type NodeLabelSpecSpec,
  type NodeTaintSpecSpec,
} from "../../resources/catalog/k8s-nodes.js";
import {
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  type KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { KubeApiError, KubeClient, type KubeCredentials } from "./kube-client.js";
import { temporaryAdminCredentials } from "./admin-credentials.js";
import { kubeletConstants } from "./kubelet-configuration.js";
import { readKubeletCredentials } from "./kubelet-kubeconfig.js";
import { NodenameId } from "./nodename.js";
import { isControlPlaneMachine } from "./node-label-spec.js";
import { patchNode, type KubeNode } from "./node-patch.js";

/** The Node is not registered (yet): the kubelet has not created it. */
export class NodeNotRegisteredError extends BasaltError {}

const RETRY_FOR_MS = 10_000;
const RETRY_EVERY_MS = 100;

/** What the node wants of its Node object. */
export interface WantedNode {
  labels: ReadonlyMap<string, string>;
  taints: readonly NodeTaintSpecSpec[];
  cordoned: boolean;
}

/** What the sync needs of a KubeClient. */
export type NodeApi = Pick<KubeClient, "request">;

export interface NodeApplyOptions {
  /** The kubelet's kubeconfig (a worker's credentials); default Talos's path. */
  kubeletKubeconfig?: string;
  /** How often a worker looks again for the kubelet's kubeconfig before it exists. */
  kubeconfigPollMs?: number;
}

/** Reads the Node, applies the wanted labels and taints, and replaces it when anything changed. */
async function syncOnce(client: NodeApi, nodename: string, want: WantedNode, signal: AbortSignal): Promise<boolean> {
  const path = `/api/v1/nodes/${encodeURIComponent(nodename)}`;
  let node: KubeNode;
  try {
    node = await client.request<KubeNode>("GET", path, undefined, signal);
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404)
      throw new NodeNotRegisteredError(`node ${nodename} is not registered`, { nodename }, { cause: err });
    throw err;
  }
  const patched = patchNode(node, want.labels, want.taints, want.cordoned);
  if (!patched.changed) return false;
  await client.request("PUT", `${path}?fieldManager=talos`, patched.node, signal);
  return true;
}

/** syncOnce until it succeeds, retrying a conflict (409) or a refusal (403) for RETRY_FOR_MS. */
export async function syncNode(
  client: NodeApi,
  nodename: string,
  want: WantedNode,
  signal: AbortSignal,
  log: Logger,
): Promise<boolean> {
  const deadline = Date.now() + RETRY_FOR_MS;
  for (;;) {
    try {
      return await syncOnce(client, nodename, want, signal);
    } catch (err) {
      const retryable = err instanceof KubeApiError && (err.status === 409 || err.status === 403);
      if (!retryable || Date.now() >= deadline) throw err;
      log.debug(`retrying node ${nodename} update: ${err.message}`);
      await new Promise((r) => setTimeout(r, RETRY_EVERY_MS));
    }
  }
}

export class NodeApplyController implements Controller {
  readonly name = "k8s.NodeApplyController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: NodeLabelSpecType, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: NodeTaintSpecType, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: NodeCordonedSpecType, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: NodeStatusType, kind: "weak" as const },
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesRootSecretsType,
      id: KubernetesRootSecretsId,
      kind: "weak" as const,
    },
    { namespace: K8S_NAMESPACE, type: NodenameType, id: NodenameId, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
  ];
  readonly outputs = [];
  private readonly kubeletKubeconfig: string;
  private readonly kubeconfigPollMs: number;

  constructor(opts: NodeApplyOptions = {}) {
    this.kubeletKubeconfig = opts.kubeletKubeconfig ?? kubeletConstants.kubeconfig;
    this.kubeconfigPollMs = opts.kubeconfigPollMs ?? 5_000;
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const nodename = ctx.get<NodenameSpec>(K8S_NAMESPACE, NodenameType, NodenameId)?.spec;
    if (!nodename || nodename.skipNodeRegistration) return;
    const creds = await this.credentials(ctx);
    if (!creds) return;
    const labels = new Map(
      ctx.list<NodeLabelSpecSpec>(K8S_NAMESPACE, NodeLabelSpecType).map((r) => [r.spec.key, r.spec.value]),
    );
    const taints = ctx
      .list<NodeTaintSpecSpec>(K8S_NAMESPACE, NodeTaintSpecType)
      .map((r) => r.spec)
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const client = new KubeClient(creds);
    try {
      const cordoned = ctx.list(K8S_NAMESPACE, NodeCordonedSpecType).length > 0;
      if (await syncNode(client, nodename.nodename, { labels, taints, cordoned }, ctx.signal, ctx.log))
        ctx.log.info(`updated labels, taints and cordon of node ${nodename.nodename}`);
    } finally {
      client.close();
    }
  }

  /** A control plane's admin credentials, or the kubelet's; undefined until they exist. */
  private async credentials(ctx: ControllerContext): Promise<KubeCredentials | undefined> {
    const machineType = ctx.get<string>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;
    if (!machineType) return undefined;
    if (isControlPlaneMachine(machineType)) {
      const root = ctx.get<KubernetesRootSpec>(SECRETS_NAMESPACE, KubernetesRootSecretsType, KubernetesRootSecretsId);
      return root ? temporaryAdminCredentials(root.spec) : undefined;
    }
    const creds = await readKubeletCredentials(this.kubeletKubeconfig);
    if (!creds) ctx.requeueAfter(this.kubeconfigPollMs);
    return creds;
  }
}
