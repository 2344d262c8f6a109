// k8s.NodenameController: Nodename `nodename`, the name the kubelet registers the node
// under: the hostname (or, with `.machine.kubelet.registerWithFQDN`, the FQDN) made a
// valid Kubernetes node name as Talos makes it.

import type { ConfigBundle } from "../../config/bundle.js";
import { InvalidInputError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { NodenameType, type NodenameSpec } from "../../resources/catalog/cluster.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { K8S_NAMESPACE } from "../../resources/catalog/k8s-kubelet.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  type HostnameStatusSpec,
} from "../../resources/catalog/network.js";

export const NodenameId = "nodename";

/** Lower case, `_` as `-`, anything but [a-z0-9.-] dropped, then no leading or trailing `-`/`.`. */
export function nodenameFromHostname(hostname: string): string {
  let out = "";
  for (const ch of hostname) {
    if (/[a-z0-9.-]/.test(ch)) out += ch;
    else if (/[A-Z]/.test(ch)) out += ch.toLowerCase();
    else if (ch === "_") out += "-";
  }
  out = out.replace(/^[-.]+|[-.]+$/g, "");
  if (!out)
    throw new InvalidInputError(`could not convert hostname "${hostname}" to a valid Kubernetes Node name`, {
      hostname,
    });
  return out;
}

export class NodenameController implements Controller {
  readonly name = "k8s.NodenameController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, id: HostnameStatusId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: NodenameType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const machine = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine;
    const status = ctx.get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId);
    if (!machine || !status) return;
    const kubelet = machine.kubelet ?? {};
    const { hostname, domainname } = status.spec;
    const name = kubelet.registerWithFQDN === true && domainname ? `${hostname}.${domainname}` : hostname;
    const spec: NodenameSpec = {
      nodename: nodenameFromHostname(name),
      hostnameVersion: String(status.metadata.version),
      skipNodeRegistration: kubelet.skipNodeRegistration === true,
    };
    ctx.modify<NodenameSpec>(K8S_NAMESPACE, NodenameType, NodenameId, () => spec);
  }
}
