// etcd's secrets as Talos makes them: EtcdRootSecrets from cluster.etcd.ca (control plane only),
// and EtcdSecrets, the server, peer, admin (CN=talos) and kube-apiserver client certificates
// signed with that CA for this node's addresses and hostname, once the network and time are ready.
import type { ConfigBundle } from "../../config/bundle.js";
import { ConfigValidationError } from "../../errors.js";
import { caLifetimeMs } from "../../pki/lifetimes.js";
import { pemFromBase64 } from "../../pki/pem.js";
import type { PemCertAndKey } from "../../resources/codec.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  EtcdRootSecretsId,
  EtcdRootSecretsType,
  EtcdSecretsId,
  EtcdSecretsType,
  type EtcdCertsSpec,
  type EtcdRootSpec,
} from "../../resources/catalog/etcd.js";
import {
  filteredNodeAddressId,
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  NodeAddressFilterIds,
  NodeAddressIds,
  NodeAddressType,
  type HostnameStatusSpec,
  type NetworkStatusSpec,
  type NodeAddressSpec,
} from "../../resources/catalog/network.js";
import { RUNTIME_NAMESPACE, TimeStatusType, type TimeStatusSpec } from "../../resources/catalog/runtime.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import { isControlPlane } from "./api.js";

/** Whether the active config makes this node a control plane with a cluster section (Talos's rootMapFunc). */
function controlPlaneConfig(ctx: ControllerContext) {
  const doc = ctx
    .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
    ?.spec?.v1alpha1WithDefaults();
  if (!doc?.machine || !doc.cluster || !isControlPlane(doc.machine.type as Parameters<typeof isControlPlane>[0]))
    return undefined;
  return doc;
}

/** EtcdRootSecrets `etcd`: cluster.etcd.ca of a control plane's config. */
export class EtcdRootController implements Controller {
  readonly name = "secrets.RootEtcdController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: EtcdRootSecretsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = controlPlaneConfig(ctx);
    if (!doc) {
      ctx.destroyOthers(SECRETS_NAMESPACE, EtcdRootSecretsType, new Set());
      return;
    }
    const ca = { crt: pemFromBase64(doc.cluster?.etcd?.ca?.crt), key: pemFromBase64(doc.cluster?.etcd?.ca?.key) };
    if (ca.crt === "") throw new ConfigValidationError(["missing cluster.etcdCA secret"]);
    ctx.modify<EtcdRootSpec>(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId, () => ({ etcdCA: ca }));
  }
}

/** What etcd's certificates name: the node's addresses (no Kubernetes subnets) and hostname. */
export interface EtcdCertSubject {
  /** Plain IPs. */
  addresses: string[];
  hostname: string;
  /** hostname, and hostname.domainname when there is a domain (Talos's HostnameStatus.DNSNames). */
  dnsNames: string[];
}

type Usage = { extKeyUsage: ("serverAuth" | "clientAuth")[]; keyUsage: ("digitalSignature" | "keyEncipherment")[] };
const serverAndClient: Usage = {
  extKeyUsage: ["serverAuth", "clientAuth"],
  keyUsage: ["digitalSignature", "keyEncipherment"],
};
const clientOnly: Usage = { extKeyUsage: ["clientAuth"], keyUsage: ["digitalSignature", "keyEncipherment"] };

interface Leaf extends Usage {
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
}

/** One certificate signed by `ca`, for 87600 h, its key of the CA's kind (Talos: ECDSA P-256 from an ECDSA CA). */
async function issue(ca: PemCertAndKey, leaf: Leaf): Promise<PemCertAndKey> {
  const { issueCertificate, loadCertificateAndKey } = await import("../../pki/index.js");
  const authority = await loadCertificateAndKey(ca.crt, ca.key);
  const cert = await issueCertificate(authority, {
    ...leaf,
    lifetimeMs: caLifetimeMs,
    algorithm: authority.key.algorithm,
  });
  return { crt: cert.certPem, key: cert.keyPem };
}

/**
 * Talos's etcd certificates: server (CN hostname; its DNS names and localhost; its addresses,
 * 127.0.0.1 and ::1 when it has an IPv6 address), peer (CN hostname, its DNS names and addresses),
 * admin (CN talos) and kube-apiserver client certificates without SANs.
 */
export async function issueEtcdCerts(ca: PemCertAndKey, s: EtcdCertSubject): Promise<EtcdCertsSpec> {
  const loopback = ["127.0.0.1", ...(s.addresses.some((a) => a.includes(":")) ? ["::1"] : [])];
  const [etcd, etcdPeer, etcdAdmin, etcdAPIServer] = await Promise.all([
    issue(ca, {
      commonName: s.hostname,
      dnsNames: [...s.dnsNames, "localhost"],
      ipAddresses: [...s.addresses, ...loopback],
      ...serverAndClient,
    }),
    issue(ca, { commonName: s.hostname, dnsNames: s.dnsNames, ipAddresses: s.addresses, ...serverAndClient }),
    issue(ca, { commonName: "talos", dnsNames: [], ipAddresses: [], ...clientOnly }),
    issue(ca, { commonName: "kube-apiserver", dnsNames: [], ipAddresses: [], ...clientOnly }),
  ]);
  return { etcd, etcdPeer, etcdAdmin, etcdAPIServer };
}

const accumulativeNoK8s = filteredNodeAddressId(NodeAddressIds.accumulative, NodeAddressFilterIds.noK8s);

/** EtcdSecrets `etcd`, issued again when the CA, the addresses or the hostname change. */
export class EtcdController implements Controller {
  readonly name = "secrets.EtcdController";
  readonly inputs = [
    { namespace: SECRETS_NAMESPACE, type: EtcdRootSecretsType, id: EtcdRootSecretsId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NetworkStatusType, id: NetworkStatusId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: TimeStatusType, id: "node", kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, id: HostnameStatusId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: accumulativeNoK8s, kind: "weak" as const },
  ];
  readonly outputs = [{ type: EtcdSecretsType }];

  private issuedFor: string | undefined;

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<EtcdRootSpec>(SECRETS_NAMESPACE, EtcdRootSecretsType, EtcdRootSecretsId)?.spec;
    if (!root) {
      this.issuedFor = undefined;
      ctx.destroyOthers(SECRETS_NAMESPACE, EtcdSecretsType, new Set());
      return;
    }
    const net = ctx.get<NetworkStatusSpec>(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId)?.spec;
    const time = ctx.get<TimeStatusSpec>(RUNTIME_NAMESPACE, TimeStatusType, "node")?.spec;
    const host = ctx.get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.spec;
    const addrs = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, accumulativeNoK8s)?.spec;
    if (!net?.addressReady || !net.hostnameReady || !time?.synced || !host || !addrs) return;
    const subject: EtcdCertSubject = {
      addresses: addrs.addresses.map((p) => p.replace(/\/\d+$/, "")),
      hostname: host.hostname,
      dnsNames:
        host.hostname === ""
          ? []
          : [host.hostname, ...(host.domainname ? [`${host.hostname}.${host.domainname}`] : [])],
    };
    const key = JSON.stringify({ ca: root.etcdCA.crt, subject });
    if (key === this.issuedFor && ctx.get(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId)) return;
    const certs = await issueEtcdCerts(root.etcdCA, subject);
    ctx.modify<EtcdCertsSpec>(SECRETS_NAMESPACE, EtcdSecretsType, EtcdSecretsId, () => certs);
    this.issuedFor = key;
  }
}
