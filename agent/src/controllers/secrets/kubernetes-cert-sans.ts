import { isIP } from "node:net";
import { ipBytes } from "../../resources/codec.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  KubernetesCertSANsId,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  type KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";
import {
  filteredNodeAddressId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
  type HostnameStatusSpec,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";
import { CertSANType, SECRETS_NAMESPACE, type CertSANSpec } from "../../resources/catalog/secrets.js";
import type { NodeIdentityFallback } from "./cert-sans.js";

/** The node's addresses Kubernetes may name: every address it has had, outside the pod and service subnets. */
const nodeAddressesId = filteredNodeAddressId(NodeAddressIds.accumulative, "no-k8s");

/** netip.Addr order: IPv4 before IPv6, then by bytes. */
export function compareIPs(a: string, b: string): number {
  const x = ipBytes(a);
  const y = ipBytes(b);
  return x.length - y.length || Buffer.compare(x, y);
}

/** A CertSAN spec built as Talos's CertSANSpec.Append does: IPs and DNS names apart, each once, sorted. */
export class CertSANBuilder {
  private readonly ips: string[] = [];
  private readonly dnsNames: string[] = [];

  /** Each value goes to the IPs when it parses as one, else to the DNS names. */
  add(...sans: string[]): this {
    for (const san of sans) {
      if (san === "") continue;
      if (isIP(san) !== 0) this.addIPs(san);
      else this.addDNSNames(san);
    }
    return this;
  }

  addIPs(...ips: string[]): this {
    for (const ip of ips) if (!this.ips.some((have) => compareIPs(have, ip) === 0)) this.ips.push(ip);
    return this;
  }

  addDNSNames(...names: string[]): this {
    for (const name of names) if (!this.dnsNames.includes(name)) this.dnsNames.push(name);
    return this;
  }

  build(): CertSANSpec {
    return { ips: [...this.ips].sort(compareIPs), dnsNames: [...this.dnsNames].sort(), fqdn: "" };
  }
}

/** What the kube-apiserver's serving certificate names (CertSANs `k8s`). */
export function kubernetesCertSANs(
  root: KubernetesRootSpec,
  node: { hostname: string; fqdn: string; addresses: string[] },
): CertSANSpec {
  const endpointHost = new URL(root.endpoint).hostname.replace(/^\[|\]$/g, "");
  return new CertSANBuilder()
    .add(endpointHost, ...root.certSANs)
    .addDNSNames(
      "kubernetes",
      "kubernetes.default",
      "kubernetes.default.svc",
      `kubernetes.default.svc.${root.dnsDomain}`,
      "localhost",
    )
    .add(node.hostname, node.fqdn)
    .addIPs(...root.apiServerIPs, ...node.addresses, "127.0.0.1")
    .build();
}

/**
 * CertSANs `k8s` on a control plane (Talos's KubernetesCertSANsController): the
 * endpoint's host, cluster.apiServer.certSANs, the in-cluster names of the
 * `kubernetes` service, localhost, the node's hostname and FQDN, the service IPs,
 * the node's addresses (accumulative, outside the Kubernetes subnets) and 127.0.0.1.
 */
export class KubernetesCertSANsController implements Controller {
  readonly name = "secrets.KubernetesCertSANsController";
  readonly inputs = [
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesRootSecretsType,
      id: KubernetesRootSecretsId,
      kind: "weak" as const,
    },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: nodeAddressesId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: CertSANType, kind: "shared" as const }];

  constructor(private readonly fallback: NodeIdentityFallback) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<KubernetesRootSpec>(
      SECRETS_NAMESPACE,
      KubernetesRootSecretsType,
      KubernetesRootSecretsId,
    )?.spec;
    if (!root) {
      ctx.destroyOthers(SECRETS_NAMESPACE, CertSANType, new Set());
      return;
    }
    const spec = kubernetesCertSANs(root, this.node(ctx));
    ctx.modify<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, KubernetesCertSANsId, () => spec);
  }

  /** The network resources when they are published; the fallback where nothing publishes them (the sandbox). */
  private node(ctx: ControllerContext): { hostname: string; fqdn: string; addresses: string[] } {
    const addresses = ctx
      .get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, nodeAddressesId)
      ?.spec.addresses.map((a) => a.replace(/\/\d+$/, ""));
    const status = ctx.list<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType)[0]?.spec;
    const fb = addresses && status ? undefined : this.fallback();
    const named = status
      ? {
          hostname: status.hostname,
          fqdn: status.domainname ? `${status.hostname}.${status.domainname}` : status.hostname,
        }
      : undefined;
    return {
      addresses: addresses ?? fb?.addresses ?? [],
      ...(named ?? { hostname: fb?.hostname ?? "", fqdn: fb?.fqdn ?? "" }),
    };
  }
}
