// What the bootstrap manifests are rendered from, computed from the machine config as
// Talos's ControlPlaneBootstrapManifestsController computes BootstrapManifestsConfig
// (plus the bootstrap token Talos reads from KubernetesRoot, which it takes from
// `.cluster.token`), and the extra manifests Talos's ControlPlaneExtraManifestsController
// lists (CNI urls, cloud provider, extraManifests, inlineManifests).

import { defaults } from "../../config/defaults.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { InvalidInputError } from "../../errors.js";
import type { BootstrapManifestsConfigSpec } from "../../resources/catalog/k8s-controlplane.js";
import { nthAddress } from "./service-cidrs.js";

/** BootstrapManifestsConfig's fields, and the bootstrap token Talos reads from KubernetesRoot. */
export type BootstrapManifestsInput = BootstrapManifestsConfigSpec & {
  bootstrapTokenId: string;
  bootstrapTokenSecret: string;
};

// Talos v1.7.6's flannel (constants.FlannelVersion) and install-cni (the extras version) images.
export const FLANNEL_IMAGE = "ghcr.io/siderolabs/flannel:v0.25.3";
export const FLANNEL_CNI_IMAGE = "ghcr.io/siderolabs/install-cni:v1.7.0-2-g7c627a8";

/**
 * kube-proxy's flags: Talos's defaults merged with `.cluster.proxy.extraArgs`
 * (overriding, except kubeconfig which may not be set), sorted by name.
 */
export function proxyArgs(
  podCIDRs: readonly string[],
  mode: string | undefined,
  extraArgs: Record<string, string> = {},
): string[] {
  if ("kubeconfig" in extraArgs)
    throw new InvalidInputError("extra arg kubeconfig is not allowed", { arg: "kubeconfig" });
  const args: Record<string, string> = {
    "cluster-cidr": podCIDRs.join(","),
    "hostname-override": "$(NODE_NAME)",
    kubeconfig: "/etc/kubernetes/kubeconfig",
    "proxy-mode": mode || "iptables",
    "conntrack-max-per-core": "0",
    ...extraArgs,
  };
  return Object.keys(args)
    .sort()
    .map((k) => `--${k}=${args[k]}`);
}

/** `.cluster.token` ("id.secret") split as Talos splits it: anything else gives empty parts. */
function bootstrapToken(token: string | undefined): { id: string; secret: string } {
  const parts = (token ?? "").split(".");
  return parts.length === 2 ? { id: parts[0]!, secret: parts[1]! } : { id: "", secret: "" };
}

/**
 * The bootstrap manifests' input for a control plane's config; undefined when the config has
 * no cluster section. `serviceHostDNSAddress` is HostDNSConfig's (set with forwardKubeDNSToHost).
 */
export function bootstrapManifestsInput(
  config: V1Alpha1Config,
  serviceHostDNSAddress = "",
): BootstrapManifestsInput | undefined {
  const cluster = config.cluster;
  if (!cluster) return undefined;
  const network = cluster.network;
  const podCIDRs = network?.podSubnets?.length ? network.podSubnets : [...defaults.podSubnets];
  const serviceCIDRs = network?.serviceSubnets?.length ? network.serviceSubnets : [...defaults.serviceSubnets];
  const dnsIPs = serviceCIDRs.map((c) => nthAddress(c, 10));
  const kubePrism = config.machine?.features?.kubePrism;
  const kubePrismPort = kubePrism?.port || defaults.kubePrismPort;
  const token = bootstrapToken(cluster.token);
  return {
    server: kubePrism?.enabled ? `https://127.0.0.1:${kubePrismPort}` : (cluster.controlPlane?.endpoint ?? ""),
    clusterDomain: network?.dnsDomain || defaults.dnsDomain,
    podCIDRs,
    proxyEnabled: cluster.proxy?.disabled !== true,
    proxyImage: cluster.proxy?.image || defaults.proxyImage,
    proxyArgs: proxyArgs(podCIDRs, cluster.proxy?.mode, cluster.proxy?.extraArgs),
    coreDNSEnabled: cluster.coreDNS?.disabled !== true,
    coreDNSImage: cluster.coreDNS?.image || defaults.coreDNSImage,
    dnsServiceIP: dnsIPs.find((ip) => !ip.includes(":")) ?? "",
    dnsServiceIPv6: dnsIPs.find((ip) => ip.includes(":")) ?? "",
    flannelEnabled: (network?.cni?.name ?? defaults.cni) === "flannel",
    flannelImage: FLANNEL_IMAGE,
    flannelCNIImage: FLANNEL_CNI_IMAGE,
    flannelExtraArgs: network?.cni?.flannel?.extraArgs ?? [],
    flannelKubeServiceHost: kubePrism?.enabled ? "127.0.0.1" : "",
    flannelKubeServicePort: kubePrism?.enabled ? String(kubePrismPort) : "",
    podSecurityPolicyEnabled: cluster.apiServer?.disablePodSecurityPolicy !== true,
    talosAPIServiceEnabled: config.machine?.features?.kubernetesTalosAPIAccess?.enabled === true,
    serviceHostDNSAddress,
    bootstrapTokenId: token.id,
    bootstrapTokenSecret: token.secret,
  };
}

/** One extra manifest: fetched from `url`, or `inline` text; its Manifest id is `${priority}-${name}`. */
export interface ExtraManifest {
  name: string;
  priority: string;
  url?: string;
  headers?: Record<string, string>;
  inline?: string;
}

/** The extra manifests of a config, in Talos's order and with its priorities. */
export function extraManifests(config: V1Alpha1Config): ExtraManifest[] {
  const cluster = config.cluster;
  if (!cluster) return [];
  const out: ExtraManifest[] = [];
  // CNI first, cloud provider after the defaults, extra manifests last.
  for (const url of cluster.network?.cni?.urls ?? []) out.push({ name: url, url, priority: "05" });
  for (const url of cluster.externalCloudProvider?.manifests ?? []) out.push({ name: url, url, priority: "30" });
  for (const url of cluster.extraManifests ?? [])
    out.push({ name: url, url, priority: "99", headers: cluster.extraManifestHeaders ?? {} });
  for (const m of cluster.inlineManifests ?? [])
    out.push({ name: m.name ?? "", priority: "99", inline: m.contents ?? "" });
  return out;
}
