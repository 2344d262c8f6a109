// The client configuration `gen config` writes: one context named after the
// cluster, with the OS CA certificate and an admin client certificate (Ed25519,
// O = roles, clientAuth, 1 year) signed by the OS CA. Values are base64 PEM.
import { stringify } from "yaml";
import { clientCertLifetimeMs, issueCertificate, loadCertificateAndKey, pemToBase64 } from "../../pki/index.js";
import { defaultClientRoles } from "./constants.js";
import type { SecretsBundle } from "./secrets.js";

export interface TalosconfigOptions {
  contextName: string;
  /** Default none (`endpoints: []`), as `gen config` leaves them. */
  endpoints?: string[];
  nodes?: string[];
  /** Default `["os:admin"]`. */
  roles?: string[];
  lifetimeMs?: number;
  now?: Date;
}

export interface ClientCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Issues a client certificate from the bundle's OS CA. */
export async function issueClientCredentials(
  secrets: SecretsBundle,
  options: { roles?: string[]; lifetimeMs?: number; now?: Date } = {},
): Promise<ClientCredentials> {
  const ca = await loadCertificateAndKey(secrets.certs.os.crt, secrets.certs.os.key);
  const client = await issueCertificate(ca, {
    organizations: options.roles ?? defaultClientRoles,
    extKeyUsage: ["clientAuth"],
    lifetimeMs: options.lifetimeMs ?? clientCertLifetimeMs,
    ...(options.now ? { now: options.now } : {}),
  });
  return { caPem: secrets.certs.os.crt, certPem: client.certPem, keyPem: client.keyPem };
}

export function talosconfigYaml(
  contextName: string,
  credentials: ClientCredentials,
  endpoints: string[] = [],
  nodes: string[] = [],
): string {
  const context: Record<string, unknown> = { endpoints: [...endpoints] };
  if (nodes.length > 0) context.nodes = [...nodes];
  context.ca = pemToBase64(credentials.caPem);
  context.crt = pemToBase64(credentials.certPem);
  context.key = pemToBase64(credentials.keyPem);
  return stringify({ context: contextName, contexts: { [contextName]: context } }, { indent: 4, lineWidth: 0 });
}

export async function generateTalosconfig(secrets: SecretsBundle, options: TalosconfigOptions): Promise<string> {
  const credentials = await issueClientCredentials(secrets, options);
  return talosconfigYaml(options.contextName, credentials, options.endpoints, options.nodes);
}
