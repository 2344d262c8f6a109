// k8s.KubePrismEndpointsController: KubePrismEndpoints `k8s-cluster`, the API servers
// KubePrism may forward to: the cluster endpoint, this node's own API server on a
// control plane (localhost), and every address of each control-plane cluster member.

import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { defaults } from "../../config/defaults.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { MemberType, type MemberSpec } from "../../resources/catalog/cluster.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  K8S_NAMESPACE,
  KubePrismEndpointsId,
  KubePrismEndpointsType,
  type KubePrismEndpoint,
  type KubePrismEndpointsSpec,
} from "../../resources/catalog/k8s-kubelet.js";

const CLUSTER_NAMESPACE = "cluster";

/** Host and port of an endpoint URL as Go's url.URL gives them (brackets off an IPv6 host; no or a bad port: 443). */
export function endpointHostPort(endpoint: string): KubePrismEndpoint | undefined {
  const m = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/?#]*)(?::([^/?#]*))?/i.exec(endpoint);
  if (!m) return undefined;
  const host = m[1]!.replace(/^\[(.*)\]$/, "$1");
  const port = m[2] && /^\d+$/.test(m[2]) && Number(m[2]) <= 0xffffffff ? Number(m[2]) : 443;
  return { host, port };
}

const isControlPlane = (doc: V1Alpha1Config) => doc.machine?.type === "init" || doc.machine?.type === "controlplane";

export function kubePrismEndpoints(doc: V1Alpha1Config, members: readonly MemberSpec[]): KubePrismEndpoint[] {
  const endpoints: KubePrismEndpoint[] = [];
  const cluster = endpointHostPort(doc.cluster?.controlPlane?.endpoint ?? "");
  if (cluster) endpoints.push(cluster);
  if (isControlPlane(doc)) {
    endpoints.push({
      host: "localhost",
      port: doc.cluster?.controlPlane?.localAPIServerPort || defaults.localAPIServerPort,
    });
  }
  for (const member of members) {
    if (!member.controlPlane) continue;
    for (const address of member.addresses) endpoints.push({ host: address, port: member.controlPlane.apiServerPort });
  }
  return endpoints;
}

export class KubePrismEndpointsController implements Controller {
  readonly name = "k8s.KubePrismEndpointsController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: CLUSTER_NAMESPACE, type: MemberType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubePrismEndpointsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1();
    if (!doc?.machine || !doc.cluster) {
      ctx.destroyOthers(K8S_NAMESPACE, KubePrismEndpointsType, new Set());
      return;
    }
    const members = ctx.list<MemberSpec>(CLUSTER_NAMESPACE, MemberType).map((r) => r.spec);
    const spec: KubePrismEndpointsSpec = { endpoints: kubePrismEndpoints(doc, members) };
    ctx.modify<KubePrismEndpointsSpec>(K8S_NAMESPACE, KubePrismEndpointsType, KubePrismEndpointsId, () => spec);
  }
}
