import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
  type HostnameStatusSpec,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";
import {
  CertSANIds,
  CertSANType,
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  type CertSANSpec,
  type OSRootSpec,
} from "../../resources/catalog/secrets.js";
import { unique } from "./issue.js";

/** Where the node is reached when the network controllers publish nothing (the sandbox observes the host). */
export type NodeIdentityFallback = () => { addresses: string[]; hostname: string; fqdn: string };

const stripPrefix = (cidr: string) => cidr.replace(/\/\d+$/, "");

/** The node's addresses, hostname and FQDN from the network resources, else from the fallback. */
export function nodeIdentity(
  ctx: ControllerContext,
  fallback: NodeIdentityFallback,
): { addresses: string[]; hostname: string; fqdn: string } {
  const current =
    ctx
      .get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.current)
      ?.spec.addresses.map(stripPrefix) ?? [];
  const status = ctx.list<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType)[0]?.spec;
  const named = status?.hostname
    ? {
        hostname: status.hostname,
        fqdn: status.domainname ? `${status.hostname}.${status.domainname}` : status.hostname,
      }
    : undefined;
  if (named && current.length) return { addresses: current, ...named };
  const fb = fallback();
  return { addresses: current.length ? current : fb.addresses, ...(named ?? { hostname: fb.hostname, fqdn: fb.fqdn }) };
}

/**
 * CertSANs `api`: what apid's and trustd's server certificates name — machine.certSANs
 * (from OSRootSecrets), the node's addresses, hostname and FQDN; loopback too, so a
 * local endpoint (the sandbox's 127.0.0.1) verifies.
 */
export class APICertSANsController implements Controller {
  readonly name = "secrets.APICertSANsController";
  readonly inputs = [
    { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.current, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: CertSANType, kind: "shared" as const }];

  constructor(private readonly fallback: NodeIdentityFallback) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<OSRootSpec>(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId)?.spec;
    if (!root) {
      ctx.destroyOthers(SECRETS_NAMESPACE, CertSANType, new Set());
      return;
    }
    const node = nodeIdentity(ctx, this.fallback);
    const spec: CertSANSpec = {
      ips: unique([...root.certSANIPs, ...node.addresses, "127.0.0.1", "::1"]).sort(),
      dnsNames: unique([...root.certSANDNSNames, node.hostname, node.fqdn, "localhost"]).sort(),
      fqdn: node.fqdn,
    };
    ctx.modify<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, CertSANIds.api, () => spec);
  }
}
