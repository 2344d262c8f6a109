// BootstrapManifestsConfig from the machine config of a control plane node: what the
// bootstrap manifests (kube-proxy, CoreDNS, flannel, the Talos API service) are
// rendered from. Talos's ControlPlaneBootstrapManifestsController.

import type { ConfigBundle } from "../../config/bundle.js";
import { defaults } from "../../config/defaults.js";
import { InvalidInputError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { ipBytes } from "../../resources/codec.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { HostDNSConfigId, HostDNSConfigType, type HostDNSConfigSpec } from "../../resources/catalog/hostdns.js";
import {
  BootstrapManifestsConfigId,
  BootstrapManifestsConfigType,
  type BootstrapManifestsConfigSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import { CONTROLPLANE_NAMESPACE } from "../../resources/catalog/k8s-secrets.js";
import { Args } from "./args-builder.js";
import { controlPlaneConfig, podCIDRs, serviceCIDRs, type ControlPlaneConfig } from "./control-plane-config.js";

const NETWORK_NAMESPACE = "network";
// Talos v1.7.6's flannel images: flannel mirrored by Sidero Labs, install-cni from its extras release.
const FLANNEL_IMAGE = "ghcr.io/siderolabs/flannel:v0.25.3";
const FLANNEL_CNI_IMAGE = "ghcr.io/siderolabs/install-cni:v1.7.0-2-g7c627a8";
const DEFAULT_KUBEPRISM_PORT = 7445;
// CoreDNS's service address is the 10th of each service CIDR.
const DNS_SERVICE_OFFSET = 10n;

/** The `n`th address of `cidr` (counted from its network address), as Go's netip prints it. */
export function nthAddress(cidr: string, n: bigint): string {
  const [addr, bits] = cidr.split("/");
  const bytes = ipBytes(addr ?? "");
  const prefix = Number(bits);
  if (bytes.length === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > bytes.length * 8) {
    throw new InvalidInputError(`failed to process Service CIDRs: invalid CIDR ${JSON.stringify(cidr)}`, { cidr });
  }
  const width = BigInt(bytes.length * 8);
  const value = BigInt(`0x${bytes.toString("hex")}`);
  const mask = ((1n << width) - 1n) ^ ((1n << (width - BigInt(prefix))) - 1n);
  const hex = ((value & mask) + n).toString(16).padStart(bytes.length * 2, "0");
  const out = Buffer.from(hex, "hex");
  if (out.length === 4) return [...out].join(".");
  // The URL parser prints IPv6 compressed as RFC 5952 says, as netip does.
  return new URL(`http://[${hex.match(/.{4}/g)!.join(":")}]/`).hostname.slice(1, -1);
}

function proxyArgs(cfg: ControlPlaneConfig): string[] {
  const args = new Args({
    "cluster-cidr": podCIDRs(cfg).join(","),
    "hostname-override": "$(NODE_NAME)",
    kubeconfig: "/etc/kubernetes/kubeconfig",
    "proxy-mode": cfg.cluster.proxy?.mode || "iptables",
    "conntrack-max-per-core": "0",
  });
  args.merge(cfg.cluster.proxy?.extraArgs ?? {}, { kubeconfig: "denied" });
  return args.render();
}

export function bootstrapManifestsConfig(cfg: ControlPlaneConfig, hostDNS: HostDNSConfigSpec | undefined): BootstrapManifestsConfigSpec {
  const dnsIPs = serviceCIDRs(cfg).map((cidr) => nthAddress(cidr.trim(), DNS_SERVICE_OFFSET));
  const kubePrism = cfg.machine.features?.kubePrism;
  const prismPort = kubePrism?.port || DEFAULT_KUBEPRISM_PORT;
  return {
    server: kubePrism?.enabled ? `https://127.0.0.1:${prismPort}` : (cfg.cluster.controlPlane?.endpoint ?? ""),
    clusterDomain: cfg.cluster.network?.dnsDomain || defaults.dnsDomain,
    podCIDRs: podCIDRs(cfg),
    proxyEnabled: !cfg.cluster.proxy?.disabled,
    proxyImage: cfg.cluster.proxy?.image || defaults.proxyImage,
    proxyArgs: proxyArgs(cfg),
    coreDNSEnabled: !cfg.cluster.coreDNS?.disabled,
    coreDNSImage: cfg.cluster.coreDNS?.image || defaults.coreDNSImage,
    dnsServiceIP: dnsIPs.find((ip) => !ip.includes(":")) ?? "",
    dnsServiceIPv6: dnsIPs.find((ip) => ip.includes(":")) ?? "",
    flannelEnabled: (cfg.cluster.network?.cni?.name ?? "flannel") === "flannel",
    flannelImage: FLANNEL_IMAGE,
    flannelCNIImage: FLANNEL_CNI_IMAGE,
    flannelExtraArgs: [...(cfg.cluster.network?.cni?.flannel?.extraArgs ?? [])],
    flannelKubeServiceHost: kubePrism?.enabled ? "127.0.0.1" : "",
    flannelKubeServicePort: kubePrism?.enabled ? String(prismPort) : "",
    podSecurityPolicyEnabled: !cfg.cluster.apiServer?.disablePodSecurityPolicy,
    talosAPIServiceEnabled: cfg.machine.features?.kubernetesTalosAPIAccess?.enabled ?? false,
    serviceHostDNSAddress: hostDNS?.serviceHostDNSAddress ?? "",
  };
}

export class ControlPlaneBootstrapManifestsController implements Controller {
  readonly name = "k8s.ControlPlaneBootstrapManifestsController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostDNSConfigType, id: HostDNSConfigId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: BootstrapManifestsConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const bundle = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const cfg = controlPlaneConfig(bundle);
    if (cfg) {
      const hostDNS = ctx.get<HostDNSConfigSpec>(NETWORK_NAMESPACE, HostDNSConfigType, HostDNSConfigId)?.spec;
      const spec = bootstrapManifestsConfig(cfg, hostDNS);
      ctx.modify<BootstrapManifestsConfigSpec>(CONTROLPLANE_NAMESPACE, BootstrapManifestsConfigType, BootstrapManifestsConfigId, () => spec);
    }
    ctx.destroyOthers(CONTROLPLANE_NAMESPACE, BootstrapManifestsConfigType, new Set(cfg ? [BootstrapManifestsConfigId] : []));
  }
}
