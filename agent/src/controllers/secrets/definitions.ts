import { defineResource } from "../../resources/definitions.js";
import { marshalGoYaml } from "../../resources/go-yaml.js";

export const secretsNamespace = "secrets";

/** A PEM certificate and key as text (Talos's x509.PEMEncodedCertificateAndKey). */
export interface PemPair {
  crt: string;
  key: string;
}

const pemProto = (p: PemPair | undefined) => (p ? { crt: Buffer.from(p.crt), key: Buffer.from(p.key) } : undefined);
// Talos's YAML shows PEM blobs base64-encoded ([]byte in Go).
const pemYaml = (p: PemPair | undefined) =>
  p ? { crt: Buffer.from(p.crt).toString("base64"), key: Buffer.from(p.key).toString("base64") } : undefined;

export interface MaintenanceRootSpec {
  ca: PemPair;
}
export const MaintenanceRootSecretsType = "MaintenanceRootSecrets.secrets.talos.dev";
export const maintenanceRootSecretsDefinition = defineResource<MaintenanceRootSpec>({
  type: MaintenanceRootSecretsType,
  defaultNamespace: secretsNamespace,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.MaintenanceRootSpec",
  toProto: (s) => ({ ca: pemProto(s.ca) }),
  toYaml: (s) => marshalGoYaml({ ca: pemYaml(s.ca) }),
});

export interface MaintenanceServiceCertsSpec {
  ca: PemPair;
  server: PemPair;
}
export const MaintenanceServiceCertificatesType = "MaintenanceServiceCertificates.secrets.talos.dev";
export const maintenanceServiceCertificatesDefinition = defineResource<MaintenanceServiceCertsSpec>({
  type: MaintenanceServiceCertificatesType,
  defaultNamespace: secretsNamespace,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.MaintenanceServiceCertsSpec",
  // The maintenance CA's key never leaves machined: only its certificate is published.
  toProto: (s) => ({ ca: { crt: Buffer.from(s.ca.crt) }, server: pemProto(s.server) }),
  toYaml: (s) => marshalGoYaml({ ca: { crt: Buffer.from(s.ca.crt).toString("base64") }, server: pemYaml(s.server) }),
});

export interface ApiCertsSpec {
  client?: PemPair;
  server: PemPair;
  acceptedCAs: { crt: string }[];
}
export const ApiCertificatesType = "ApiCertificates.secrets.talos.dev";
export const apiCertificatesDefinition = defineResource<ApiCertsSpec>({
  type: ApiCertificatesType,
  defaultNamespace: secretsNamespace,
  sensitive: true,
  protoSpecType: "talos.resource.definitions.secrets.APICertsSpec",
  toProto: (s) => ({
    client: pemProto(s.client),
    server: pemProto(s.server),
    accepted_c_as: s.acceptedCAs.map((c) => ({ crt: Buffer.from(c.crt) })),
  }),
  toYaml: (s) =>
    marshalGoYaml({
      ...(s.client ? { client: pemYaml(s.client) } : {}),
      server: pemYaml(s.server),
      acceptedCAs: s.acceptedCAs.map((c) => ({ crt: Buffer.from(c.crt).toString("base64") })),
    }),
});

export const secretsDefinitions = [maintenanceRootSecretsDefinition, maintenanceServiceCertificatesDefinition, apiCertificatesDefinition];
