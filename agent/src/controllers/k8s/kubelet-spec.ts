// k8s.KubeletSpecController: KubeletSpec `kubelet` from KubeletConfig, Nodename and
// NodeIP — the kubelet's flags (sorted by name, as Talos's argsbuilder prints them,
// extraArgs merged over Talos's with the flags it owns refused) and its
// KubeletConfiguration object.

import { BasaltError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { NodenameType, type NodenameSpec } from "../../resources/catalog/cluster.js";
import {
  K8S_NAMESPACE,
  KubeletConfigType,
  KubeletId,
  KubeletSpecType,
  NodeIPType,
  type KubeletConfigSpec,
  type KubeletSpecSpec,
  type NodeIPSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import {
  kubeletConstants as k,
  renderKubeletConfiguration,
  supportsConfigContainerRuntimeEndpoint,
} from "./kubelet-configuration.js";
import { NodenameId } from "./nodename.js";

/** An extraArgs flag Talos sets itself and refuses to take from the user. */
export class KubeletArgDeniedError extends BasaltError {}

/** Flags extraArgs may not set (Talos's merge policies: MergeDenied). */
export const deniedKubeletArgs = [
  "bootstrap-kubeconfig",
  "kubeconfig",
  "container-runtime",
  "container-runtime-endpoint",
  "config",
  "cert-dir",
] as const;

export interface KubeletArgsInput {
  config: KubeletConfigSpec;
  nodename: string;
  /** The node's IPs (NodeIP); needed only when extraArgs has no node-ip. */
  nodeIPs?: readonly string[];
}

/** The kubelet's flags and the node name Talos expects it to register (""; the user overrides it). */
export function kubeletArgs(input: KubeletArgsInput): { args: string[]; expectedNodename: string } {
  const cfg = input.config;
  const args = new Map<string, string>([
    ["config", k.configPath],
    ["cert-dir", k.pkiDir],
    ["hostname-override", input.nodename],
  ]);
  if (!cfg.skipNodeRegistration) {
    args.set("bootstrap-kubeconfig", k.bootstrapKubeconfig);
    args.set("kubeconfig", k.kubeconfig);
  }
  if (cfg.cloudProviderExternal) args.set("cloud-provider", "external");
  if (!supportsConfigContainerRuntimeEndpoint(cfg.image)) args.set("container-runtime-endpoint", k.criAddress);

  const extra = cfg.extraArgs;
  const expectedNodename = "hostname-override" in extra ? "" : input.nodename;
  if (!("node-ip" in extra)) args.set("node-ip", (input.nodeIPs ?? []).join(","));

  for (const key of Object.keys(extra).sort()) {
    if ((deniedKubeletArgs as readonly string[]).includes(key)) {
      throw new KubeletArgDeniedError(`extra arg "${key}" is not allowed`, { arg: key });
    }
    args.set(key, extra[key]!);
  }
  if (cfg.credentialProviderConfig) {
    args.set("image-credential-provider-bin-dir", k.credentialProviderBinDir);
    args.set("image-credential-provider-config", k.credentialProviderConfig);
  }
  const sorted = [...args.keys()].sort();
  return { args: sorted.map((key) => `--${key}=${args.get(key)}`), expectedNodename };
}

export class KubeletSpecController implements Controller {
  readonly name = "k8s.KubeletSpecController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: KubeletConfigType, id: KubeletId, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: NodenameType, id: NodenameId, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: NodeIPType, id: KubeletId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubeletSpecType }];

  /** container: machined runs in a container (the sandbox), where Talos does not protect kernel defaults. */
  constructor(private readonly opts: { container?: boolean } = {}) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const config = ctx.get<KubeletConfigSpec>(K8S_NAMESPACE, KubeletConfigType, KubeletId)?.spec;
    const nodename = ctx.get<NodenameSpec>(K8S_NAMESPACE, NodenameType, NodenameId)?.spec;
    // As Talos: nothing is written (or torn down) until every input is there.
    if (!config || !nodename) return;
    const nodeIPs = ctx.get<NodeIPSpec>(K8S_NAMESPACE, NodeIPType, KubeletId)?.spec.addresses;
    if (!("node-ip" in config.extraArgs) && !nodeIPs) return;

    const { args, expectedNodename } = kubeletArgs({
      config,
      nodename: nodename.nodename,
      ...(nodeIPs ? { nodeIPs } : {}),
    });
    const spec: KubeletSpecSpec = {
      image: config.image,
      args,
      extraMounts: config.extraMounts,
      expectedNodename,
      config: renderKubeletConfiguration(config, this.opts),
      ...(config.credentialProviderConfig ? { credentialProviderConfig: config.credentialProviderConfig } : {}),
    };
    ctx.modify<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId, () => spec);
  }
}
