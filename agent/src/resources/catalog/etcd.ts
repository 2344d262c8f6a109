// etcd's resources: EtcdRootSecrets and EtcdSecrets (namespace `secrets`, sensitive), and in
// namespace `etcd` EtcdConfig (from the machine config), EtcdSpec (what the etcd service runs
// with) and PKIStatus (the PKI is on disk); EtcdMember `local` is defined with the cluster resources.

import { type PemCertAndKey, netIP, pemCertAndKeyProto, pemCertAndKeyYaml } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { SECRETS_NAMESPACE } from "./secrets.js";

export const ETCD_NAMESPACE = "etcd";

// --- EtcdRootSecrets.secrets.talos.dev (id "etcd") ---
export const EtcdRootSecretsType = "EtcdRootSecrets.secrets.talos.dev";
export const EtcdRootSecretsId = "etcd";
export interface EtcdRootSpec {
  etcdCA: PemCertAndKey;
}
export const etcdRootDefinition = defineResource<EtcdRootSpec>({
  type: EtcdRootSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.EtcdRootSpec",
  toProto: (s) => ({ etcd_ca: pemCertAndKeyProto(s.etcdCA) }),
  toYaml: (s) => marshalGoYaml({ etcdCA: pemCertAndKeyYaml(s.etcdCA) }),
});

// --- EtcdSecrets.secrets.talos.dev (id "etcd") ---
export const EtcdSecretsType = "EtcdSecrets.secrets.talos.dev";
export const EtcdSecretsId = "etcd";
export interface EtcdCertsSpec {
  /** etcd's server certificate (client URLs). */
  etcd: PemCertAndKey;
  etcdPeer: PemCertAndKey;
  /** machined's client certificate (CN=talos). */
  etcdAdmin: PemCertAndKey;
  /** kube-apiserver's client certificate (CN=kube-apiserver). */
  etcdAPIServer: PemCertAndKey;
}
export const etcdSecretsDefinition = defineResource<EtcdCertsSpec>({
  type: EtcdSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.EtcdCertsSpec",
  toProto: (s) => ({
    etcd: pemCertAndKeyProto(s.etcd),
    etcd_peer: pemCertAndKeyProto(s.etcdPeer),
    etcd_admin: pemCertAndKeyProto(s.etcdAdmin),
    etcd_api_server: pemCertAndKeyProto(s.etcdAPIServer),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      etcd: pemCertAndKeyYaml(s.etcd),
      etcdPeer: pemCertAndKeyYaml(s.etcdPeer),
      etcdAdmin: pemCertAndKeyYaml(s.etcdAdmin),
      etcdAPIServer: pemCertAndKeyYaml(s.etcdAPIServer),
    }),
});

// --- EtcdConfigs.etcd.talos.dev (id "etcd") ---
export const EtcdConfigType = "EtcdConfigs.etcd.talos.dev";
export const EtcdConfigId = "etcd";
export interface EtcdConfigSpec {
  advertiseValidSubnets: string[];
  advertiseExcludeSubnets: string[];
  listenValidSubnets: string[];
  listenExcludeSubnets: string[];
  image: string;
  extraArgs: Record<string, string>;
}
export const etcdConfigDefinition = defineResource<EtcdConfigSpec>({
  type: EtcdConfigType,
  defaultNamespace: ETCD_NAMESPACE,
  printColumns: [{ name: "Image", jsonPath: "{.image}" }],
  protoSpecType: "talos.resource.definitions.etcd.ConfigSpec",
  toProto: (s) => ({
    advertise_valid_subnets: s.advertiseValidSubnets,
    advertise_exclude_subnets: s.advertiseExcludeSubnets,
    image: s.image,
    extra_args: s.extraArgs,
    listen_valid_subnets: s.listenValidSubnets,
    listen_exclude_subnets: s.listenExcludeSubnets,
  }),
  // Talos: the valid subnets are omitempty, the others always printed.
  toYaml: (s) =>
    marshalGoYaml({
      ...(s.advertiseValidSubnets.length > 0 ? { advertiseValidSubnets: s.advertiseValidSubnets } : {}),
      advertiseExcludeSubnets: s.advertiseExcludeSubnets,
      ...(s.listenValidSubnets.length > 0 ? { listenValidSubnets: s.listenValidSubnets } : {}),
      listenExcludeSubnets: s.listenExcludeSubnets,
      image: s.image,
      extraArgs: s.extraArgs,
    }),
});

// --- EtcdSpecs.etcd.talos.dev (id "etcd") ---
export const EtcdSpecType = "EtcdSpecs.etcd.talos.dev";
export const EtcdSpecId = "etcd";
export interface EtcdSpecSpec {
  /** The member name: the node's hostname. */
  name: string;
  advertisedAddresses: string[];
  listenPeerAddresses: string[];
  listenClientAddresses: string[];
  image: string;
  extraArgs: Record<string, string>;
}
export const etcdSpecDefinition = defineResource<EtcdSpecSpec>({
  type: EtcdSpecType,
  defaultNamespace: ETCD_NAMESPACE,
  printColumns: [
    { name: "Name", jsonPath: "{.name}" },
    { name: "AdvertisedAddresses", jsonPath: "{.advertisedAddresses}" },
    { name: "ListenPeerAddresses", jsonPath: "{.listenPeerAddresses}" },
    { name: "ListenClientAddresses", jsonPath: "{.listenClientAddresses}" },
  ],
  protoSpecType: "talos.resource.definitions.etcd.SpecSpec",
  toProto: (s) => ({
    name: s.name,
    advertised_addresses: s.advertisedAddresses.map(netIP),
    image: s.image,
    extra_args: s.extraArgs,
    listen_peer_addresses: s.listenPeerAddresses.map(netIP),
    listen_client_addresses: s.listenClientAddresses.map(netIP),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      name: s.name,
      advertisedAddresses: s.advertisedAddresses,
      listenPeerAddresses: s.listenPeerAddresses,
      listenClientAddresses: s.listenClientAddresses,
      image: s.image,
      extraArgs: s.extraArgs,
    }),
});

// --- PKIStatuses.etcd.talos.dev (id "etcd") ---
export const EtcdPKIStatusType = "PKIStatuses.etcd.talos.dev";
export const EtcdPKIStatusId = "etcd";
export interface EtcdPKIStatusSpec {
  ready: boolean;
  /** The EtcdSecrets version written to disk. */
  version: string;
}
export const etcdPKIStatusDefinition = defineResource<EtcdPKIStatusSpec>({
  type: EtcdPKIStatusType,
  defaultNamespace: ETCD_NAMESPACE,
  printColumns: [
    { name: "Ready", jsonPath: "{.ready}" },
    { name: "Secrets Version", jsonPath: "{.version}" },
  ],
  protoSpecType: "talos.resource.definitions.etcd.PKIStatusSpec",
  toProto: (s) => ({ ready: s.ready, version: s.version }),
});

// --- EtcdMembers.etcd.talos.dev (id "local"): defined with the cluster resources (cluster.ts) ---
export { EtcdMemberType, type EtcdMemberSpec } from "./cluster.js";
export const EtcdLocalMemberId = "local";

/** A member ID as Talos prints it: %016x. */
export const formatMemberId = (id: bigint): string => id.toString(16).padStart(16, "0");

export const etcdDefinitions: readonly ResourceDefinition<never>[] = [
  etcdRootDefinition,
  etcdSecretsDefinition,
  etcdConfigDefinition,
  etcdSpecDefinition,
  etcdPKIStatusDefinition,
];
