// Where to pull a registry's content from, as Talos v1.7 resolves .machine.registries:
// the host's mirror endpoints (or the "*" mirror's) replace the registry itself;
// without a mirror, https://<host> (Docker Hub: registry-1.docker.io).
// TLS and auth come from .registries.config keyed by each endpoint's host.

import { InvalidInputError } from "../errors.js";

export interface RegistryTls {
  ca?: string;
  clientCert?: string;
  clientKey?: string;
  insecureSkipVerify?: boolean;
}

export interface RegistryAuth {
  username?: string;
  password?: string;
  /** base64 "user:password" */
  auth?: string;
  identityToken?: string;
}

/** .machine.registries decoded (PEMs already base64-decoded). */
export interface RegistriesConfig {
  mirrors?: Record<string, { endpoints?: string[]; overridePath?: boolean }>;
  config?: Record<string, { tls?: RegistryTls; auth?: RegistryAuth }>;
}

export interface RegistryEndpoint {
  /** Base URL including the API path, e.g. https://mirror.example:5000/v2 */
  base: URL;
  tls?: RegistryTls;
  credentials?: { username: string; password: string };
}

function credentialsOf(
  auth: RegistryAuth | undefined,
  host: string,
): { username: string; password: string } | undefined {
  if (!auth) return undefined;
  if (auth.username) return { username: auth.username, password: auth.password ?? "" };
  if (auth.identityToken) return { username: "", password: auth.identityToken };
  if (auth.auth) {
    const decoded = Buffer.from(auth.auth, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) throw new InvalidInputError(`invalid decoded auth for "${host}"`, { host });
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1).replace(/\0+$/, "") };
  }
  return undefined;
}

export function registryEndpoints(registries: RegistriesConfig | undefined, host: string): RegistryEndpoint[] {
  const mirror = registries?.mirrors?.[host] ?? registries?.mirrors?.["*"];
  const urls = mirror?.endpoints?.length
    ? mirror.endpoints
    : [`https://${host === "docker.io" ? "registry-1.docker.io" : host}`];
  const overridePath = mirror?.overridePath ?? false;
  return urls.map((raw) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch (err) {
      throw new InvalidInputError(
        `error parsing endpoint "${raw}" for host "${host}"`,
        { host, endpoint: raw },
        { cause: err },
      );
    }
    if (u.protocol !== "http:" && u.protocol !== "https:")
      throw new InvalidInputError(`endpoint "${raw}" for host "${host}" must be http or https`, {
        host,
        endpoint: raw,
      });
    const cfg = registries?.config?.[u.host];
    if (u.protocol !== "https:" && cfg?.tls)
      throw new InvalidInputError(`TLS config specified for non-HTTPS registry: "${u.host}"`, { host: u.host });
    let p = u.pathname.replace(/\/+$/, "");
    if (!overridePath && !p.endsWith("/v2")) p += "/v2";
    u.pathname = p;
    u.search = "";
    const credentials = credentialsOf(cfg?.auth, u.host);
    return { base: u, ...(cfg?.tls ? { tls: cfg.tls } : {}), ...(credentials ? { credentials } : {}) };
  });
}
