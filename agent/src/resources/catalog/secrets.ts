// Namespace `secrets` (every type sensitive): the OS and maintenance CAs and the
// certificates apid/trustd/the maintenance service serve with. PEM material is held
// as PEM text; YAML shows it base64-encoded (as Talos marshals its PEM types), the
// protobuf side carries the PEM bytes.

import { type PemCertAndKey, netIP, pemCertAndKeyProto, pemCertAndKeyYaml, pemYaml } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";

export const SECRETS_NAMESPACE = "secrets";

/** A PEM certificate without key. */
export interface PemCertificate {
  crt: string;
}

const certProto = (c: PemCertificate) => ({ crt: Buffer.from(c.crt, "utf8") });
const certYaml = (c: PemCertificate) => ({ crt: pemYaml(c.crt) });

// --- OSRootSecrets.secrets.talos.dev (id "os") ---
export const OSRootSecretsType = "OSRootSecrets.secrets.talos.dev";
export const OSRootSecretsId = "os";
export interface OSRootSpec {
  issuingCA?: PemCertAndKey;
  acceptedCAs: PemCertificate[];
  certSANIPs: string[];
  certSANDNSNames: string[];
  token: string;
}
export const osRootDefinition = defineResource<OSRootSpec>({
  type: OSRootSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.OSRootSpec",
  toProto: (s) => ({
    issuing_ca: pemCertAndKeyProto(s.issuingCA),
    cert_sani_ps: s.certSANIPs.map(netIP),
    cert_sandns_names: s.certSANDNSNames,
    token: s.token,
    accepted_c_as: s.acceptedCAs.map(certProto),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      issuingCA: pemCertAndKeyYaml(s.issuingCA),
      acceptedCAs: s.acceptedCAs.map(certYaml),
      certSANIPs: s.certSANIPs,
      certSANDNSNames: s.certSANDNSNames,
      token: s.token,
    }),
});

// --- MaintenanceRootSecrets.secrets.talos.dev (id "maintenance") ---
export const MaintenanceRootSecretsType = "MaintenanceRootSecrets.secrets.talos.dev";
export const MaintenanceRootSecretsId = "maintenance";
export interface MaintenanceRootSpec {
  ca: PemCertAndKey;
}
export const maintenanceRootDefinition = defineResource<MaintenanceRootSpec>({
  type: MaintenanceRootSecretsType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.MaintenanceRootSpec",
  toProto: (s) => ({ ca: pemCertAndKeyProto(s.ca) }),
  toYaml: (s) => marshalGoYaml({ ca: pemCertAndKeyYaml(s.ca) }),
});

// --- MaintenanceServiceCertificates.secrets.talos.dev (id "maintenance") ---
export const MaintenanceServiceCertificatesType = "MaintenanceServiceCertificates.secrets.talos.dev";
export const MaintenanceServiceCertificatesId = "maintenance";
export interface MaintenanceServiceCertsSpec {
  /** The CA certificate (key ""). */
  ca: PemCertAndKey;
  server: PemCertAndKey;
}
export const maintenanceServiceCertsDefinition = defineResource<MaintenanceServiceCertsSpec>({
  type: MaintenanceServiceCertificatesType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.MaintenanceServiceCertsSpec",
  toProto: (s) => ({ ca: pemCertAndKeyProto(s.ca), server: pemCertAndKeyProto(s.server) }),
  toYaml: (s) => marshalGoYaml({ ca: pemCertAndKeyYaml(s.ca), server: pemCertAndKeyYaml(s.server) }),
});

// --- ApiCertificates.secrets.talos.dev (id "api") ---
export const ApiCertificatesType = "ApiCertificates.secrets.talos.dev";
export const ApiCertificatesId = "api";
export interface APICertsSpec {
  client?: PemCertAndKey;
  server: PemCertAndKey;
  acceptedCAs: PemCertificate[];
}
export const apiCertsDefinition = defineResource<APICertsSpec>({
  type: ApiCertificatesType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.APICertsSpec",
  toProto: (s) => ({
    client: pemCertAndKeyProto(s.client),
    server: pemCertAndKeyProto(s.server),
    accepted_c_as: s.acceptedCAs.map(certProto),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      client: pemCertAndKeyYaml(s.client),
      server: pemCertAndKeyYaml(s.server),
      acceptedCAs: s.acceptedCAs.map(certYaml),
    }),
});

// --- TrustdCertificates.secrets.talos.dev (id "trustd") ---
export const TrustdCertificatesType = "TrustdCertificates.secrets.talos.dev";
export const TrustdCertificatesId = "trustd";
export interface TrustdCertsSpec {
  server: PemCertAndKey;
  acceptedCAs: PemCertificate[];
}
export const trustdCertsDefinition = defineResource<TrustdCertsSpec>({
  type: TrustdCertificatesType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.TrustdCertsSpec",
  toProto: (s) => ({ server: pemCertAndKeyProto(s.server), accepted_c_as: s.acceptedCAs.map(certProto) }),
  toYaml: (s) => marshalGoYaml({ server: pemCertAndKeyYaml(s.server), acceptedCAs: s.acceptedCAs.map(certYaml) }),
});

// --- CertSANs.secrets.talos.dev (ids "api", "maintenance"; Talos also has "k8s") ---
export const CertSANType = "CertSANs.secrets.talos.dev";
export const CertSANIds = { api: "api", maintenance: "maintenance" } as const;
export interface CertSANSpec {
  ips: string[];
  dnsNames: string[];
  fqdn: string;
}
export const certSANDefinition = defineResource<CertSANSpec>({
  type: CertSANType,
  defaultNamespace: SECRETS_NAMESPACE,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.CertSANSpec",
  toProto: (s) => ({ i_ps: s.ips.map(netIP), dns_names: s.dnsNames, fqdn: s.fqdn }),
});

export const secretsDefinitions: readonly ResourceDefinition<never>[] = [
  certSANDefinition,
  osRootDefinition,
  maintenanceRootDefinition,
  maintenanceServiceCertsDefinition,
  apiCertsDefinition,
  trustdCertsDefinition,
];
