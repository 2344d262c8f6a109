// The Kubernetes secrets of a control plane (namespace `secrets`, all sensitive) and the
// readiness of the files rendered from them (namespace `controlplane`). PEM material is
// held as PEM text: base64 in YAML, bytes in protobuf, as in catalog/secrets.ts.

import { netIP, type PemCertAndKey, pemCertAndKeyProto, pemCertAndKeyYaml, pemYaml } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { SECRETS_NAMESPACE, type PemCertificate } from "./secrets.js";

export const CONTROLPLANE_NAMESPACE = "controlplane";

/** The CertSANs.secrets.talos.dev id of the kube-apiserver's serving certificate names. */
export const KubernetesCertSANsId = "k8s";

const certProto = (c: PemCertificate) => ({ crt: Buffer.from(c.crt, "utf8") });
const certYaml = (c: PemCertificate) => ({ crt: pemYaml(c.crt) });

/**
 * A URL as gopkg.in/yaml.v3 marshals Go's url.URL (every field, lower-cased names),
 * for the URL fields of KubernetesRootSpec.
 */
export function goUrlYaml(text: string): Record<string, unknown> {
  const u = new URL(text);
  // WHATWG URLs report "/" for an empty path; Go keeps the path as written.
  const path = text.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, "").split(/[?#]/)[0] ?? "";
  return {
    scheme: u.protocol.replace(/:$/, ""),
    opaque: "",
    user: null,
    host: u.host,
    path,
    rawpath: "",
    omithost: false,
    forcequery: false,
    rawquery: u.search.replace(/^\?/, ""),
    fragment: u.hash.replace(/^#/, ""),
    rawfragment: "",
  };
}

// --- KubernetesRootSecrets.secrets.talos.dev (id "k8s") ---
export const KubernetesRootSecretsType = "KubernetesRootSecrets.secrets.talos.dev";
export const KubernetesRootSecretsId = "k8s";
export interface KubernetesRootSpec {
  /** cluster.clusterName. */
  name: string;
  /** cluster.controlPlane.endpoint, as written. */
  endpoint: string;
  /** KubePrism's https://127.0.0.1:<port> when enabled, else https://localhost:<localAPIServerPort>. */
  localEndpoint: string;
  /** cluster.apiServer.certSANs. */
  certSANs: string[];
  /** The first address of each service subnet. */
  apiServerIPs: string[];
  dnsDomain: string;
  /** cluster.ca when it has its key. */
  issuingCA?: PemCertAndKey;
  /** cluster.acceptedCAs, then cluster.ca's certificate. */
  acceptedCAs: PemCertificate[];
  /** cluster.serviceAccount.key (PEM). */
  serviceAccount: string;
  aggregatorCA: PemCertAndKey;
  aesCBCEncryptionSecret: string;
  bootstrapTokenID: string;
  bootstrapTokenSecret: string;
  secretboxEncryptionSecret: string;
}
export const kubernetesRootDefinition = defineResource<KubernetesRootSpec>({
  type: KubernetesRootSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.KubernetesRootSpec",
  toProto: (s) => ({
    name: s.name,
    endpoint: { full_path: s.endpoint },
    local_endpoint: { full_path: s.localEndpoint },
    cert_sa_ns: s.certSANs,
    dns_domain: s.dnsDomain,
    issuing_ca: pemCertAndKeyProto(s.issuingCA),
    service_account: { key: Buffer.from(s.serviceAccount, "utf8") },
    aggregator_ca: pemCertAndKeyProto(s.aggregatorCA),
    aescbc_encryption_secret: s.aesCBCEncryptionSecret,
    bootstrap_token_id: s.bootstrapTokenID,
    bootstrap_token_secret: s.bootstrapTokenSecret,
    secretbox_encryption_secret: s.secretboxEncryptionSecret,
    api_server_ips: s.apiServerIPs.map(netIP),
    accepted_c_as: s.acceptedCAs.map(certProto),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      name: s.name,
      endpoint: goUrlYaml(s.endpoint),
      local_endpoint: goUrlYaml(s.localEndpoint),
      certSANs: s.certSANs,
      apiServerIPs: s.apiServerIPs,
      dnsDomain: s.dnsDomain,
      issuingCA: pemCertAndKeyYaml(s.issuingCA),
      acceptedCAs: s.acceptedCAs.map(certYaml),
      serviceAccount: { key: pemYaml(s.serviceAccount) },
      aggregatorCA: pemCertAndKeyYaml(s.aggregatorCA),
      aesCBCEncryptionSecret: s.aesCBCEncryptionSecret,
      bootstrapTokenID: s.bootstrapTokenID,
      bootstrapTokenSecret: s.bootstrapTokenSecret,
      secretboxEncryptionSecret: s.secretboxEncryptionSecret,
    }),
});

// --- KubernetesSecrets.secrets.talos.dev (id "k8s-certs"): the control plane's kubeconfigs ---
export const KubernetesSecretsType = "KubernetesSecrets.secrets.talos.dev";
export const KubernetesSecretsId = "k8s-certs";
export interface KubernetesCertsSpec {
  schedulerKubeconfig: string;
  controllerManagerKubeconfig: string;
  /** talos:admin through the local endpoint. */
  localhostAdminKubeconfig: string;
  /** talos:admin through the cluster endpoint. */
  adminKubeconfig: string;
}
export const kubernetesSecretsDefinition = defineResource<KubernetesCertsSpec>({
  type: KubernetesSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.KubernetesCertsSpec",
  toProto: (s) => ({
    scheduler_kubeconfig: s.schedulerKubeconfig,
    controller_manager_kubeconfig: s.controllerManagerKubeconfig,
    localhost_admin_kubeconfig: s.localhostAdminKubeconfig,
    admin_kubeconfig: s.adminKubeconfig,
  }),
});

// --- KubernetesDynamicCerts.secrets.talos.dev (id "k8s-dynamic-certs") ---
export const KubernetesDynamicCertsType = "KubernetesDynamicCerts.secrets.talos.dev";
export const KubernetesDynamicCertsId = "k8s-dynamic-certs";
export interface KubernetesDynamicCertsSpec {
  apiServer: PemCertAndKey;
  apiServerKubeletClient: PemCertAndKey;
  frontProxy: PemCertAndKey;
}
export const kubernetesDynamicCertsDefinition = defineResource<KubernetesDynamicCertsSpec>({
  type: KubernetesDynamicCertsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.KubernetesDynamicCertsSpec",
  toProto: (s) => ({
    api_server: pemCertAndKeyProto(s.apiServer),
    api_server_kubelet_client: pemCertAndKeyProto(s.apiServerKubeletClient),
    front_proxy: pemCertAndKeyProto(s.frontProxy),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      apiServer: pemCertAndKeyYaml(s.apiServer),
      apiServerKubeletClient: pemCertAndKeyYaml(s.apiServerKubeletClient),
      frontProxy: pemCertAndKeyYaml(s.frontProxy),
    }),
});

/** Ready and the version of the input the files were rendered from. */
export interface RenderStatusSpec {
  ready: boolean;
  version: string;
}
// Talos labels the version column "Secrets Version" on both status types.
const renderStatusColumns = [
  { name: "Ready", jsonPath: "{.ready}" },
  { name: "Secrets Version", jsonPath: "{.version}" },
];

// --- SecretStatuses.kubernetes.talos.dev (id "static-pods"): the secrets files are written ---
export const SecretsStatusType = "SecretStatuses.kubernetes.talos.dev";
export const StaticPodSecretsStatusId = "static-pods";
export const secretsStatusDefinition = defineResource<RenderStatusSpec>({
  type: SecretsStatusType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  printColumns: renderStatusColumns,
  protoSpecType: "talos.resource.definitions.k8s.SecretsStatusSpec",
  toProto: (s) => ({ ready: s.ready, version: s.version }),
});

// --- ConfigStatuses.kubernetes.talos.dev (id "static-pods"): the config files are written ---
export const ConfigStatusType = "ConfigStatuses.kubernetes.talos.dev";
export const StaticPodConfigStatusId = "static-pods";
export const configStatusDefinition = defineResource<RenderStatusSpec>({
  type: ConfigStatusType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  printColumns: renderStatusColumns,
  protoSpecType: "talos.resource.definitions.k8s.ConfigStatusSpec",
  toProto: (s) => ({ ready: s.ready, version: s.version }),
});

/** google.protobuf.Struct (camel-cased as the common types are loaded) of a JSON-like map. */
export function protoStruct(map: Record<string, unknown>): { fields: Record<string, unknown> } {
  return { fields: Object.fromEntries(Object.entries(map).map(([k, v]) => [k, protoValue(v)])) };
}

function protoValue(v: unknown): Record<string, unknown> {
  if (v === null || v === undefined) return { nullValue: 0 };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(protoValue) } };
  if (typeof v === "object") return { structValue: protoStruct(v as Record<string, unknown>) };
  return { stringValue: String(v) };
}

// --- AdmissionControlConfigs.kubernetes.talos.dev (id "admission-control") ---
export const AdmissionControlConfigType = "AdmissionControlConfigs.kubernetes.talos.dev";
export const AdmissionControlConfigId = "admission-control";
export interface AdmissionControlConfigSpec {
  /** cluster.apiServer.admissionControl, in order. */
  config: { name: string; configuration: Record<string, unknown> | null }[];
}
export const admissionControlConfigDefinition = defineResource<AdmissionControlConfigSpec>({
  type: AdmissionControlConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.AdmissionControlConfigSpec",
  toProto: (s) => ({
    config: s.config.map((p) => ({
      name: p.name,
      ...(p.configuration ? { configuration: protoStruct(p.configuration) } : {}),
    })),
  }),
});

// --- AuditPolicyConfigs.kubernetes.talos.dev (id "audit-policy") ---
export const AuditPolicyConfigType = "AuditPolicyConfigs.kubernetes.talos.dev";
export const AuditPolicyConfigId = "audit-policy";
/** A Kubernetes object's map as the user wrote it (the audit policy, the scheduler configuration). */
export interface UnstructuredConfigSpec {
  config: Record<string, unknown> | null;
}
export const auditPolicyConfigDefinition = defineResource<UnstructuredConfigSpec>({
  type: AuditPolicyConfigType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.k8s.AuditPolicyConfigSpec",
  toProto: (s) => (s.config ? { config: protoStruct(s.config) } : {}),
});

export const kubernetesSecretsDefinitions: readonly ResourceDefinition<never>[] = [
  kubernetesRootDefinition,
  kubernetesSecretsDefinition,
  kubernetesDynamicCertsDefinition,
  secretsStatusDefinition,
  configStatusDefinition,
  admissionControlConfigDefinition,
  auditPolicyConfigDefinition,
];
