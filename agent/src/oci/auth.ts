// Registry authentication (distribution's token spec): a 401 names a Bearer realm
// (or Basic); a token is fetched from the realm for the scope, with the endpoint's
// credentials when it has them, and the request is sent again.

import { RegistryError } from "./errors.js";
import { httpRequest, readBody } from "./http.js";
import type { RegistryEndpoint } from "./hosts.js";

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parses one WWW-Authenticate header: `Bearer realm="…",service="…",scope="…"`. */
export function parseChallenge(header: string): Challenge | undefined {
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return undefined;
  const params: Record<string, string> = {};
  for (const p of m[2]!.matchAll(/(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g))
    params[p[1]!.toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, "$1") : p[3]!;
  return { scheme: m[1]!.toLowerCase(), params };
}

function basic(c: { username: string; password: string }): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;
}

/** The Authorization header value answering a challenge. */
export async function answerChallenge(
  challenge: Challenge,
  endpoint: RegistryEndpoint,
  scope: string,
): Promise<string> {
  if (challenge.scheme === "basic") {
    if (!endpoint.credentials)
      throw new RegistryError(
        `${endpoint.base.host} wants a username and password; none is configured in .machine.registries.config`,
        { host: endpoint.base.host },
      );
    return basic(endpoint.credentials);
  }
  if (challenge.scheme !== "bearer" || !challenge.params.realm)
    throw new RegistryError(`unsupported authentication challenge "${challenge.scheme}" from ${endpoint.base.host}`, {
      host: endpoint.base.host,
    });
  const realm = new URL(challenge.params.realm);
  if (challenge.params.service) realm.searchParams.set("service", challenge.params.service);
  realm.searchParams.set("scope", challenge.params.scope ?? scope);
  const headers: Record<string, string> = { accept: "application/json" };
  if (endpoint.credentials) headers.authorization = basic(endpoint.credentials);
  const res = await httpRequest({
    method: "GET",
    url: realm,
    headers,
    ...(endpoint.tls && realm.host === endpoint.base.host ? { tls: endpoint.tls } : {}),
  });
  const body = await readBody(res, 1024 * 1024);
  if (res.statusCode !== 200)
    throw new RegistryError(
      `token request to ${realm.host} answered ${res.statusCode}: ${body.toString("utf8").slice(0, 200)}`,
      { realm: realm.href, status: res.statusCode },
    );
  let token: unknown;
  try {
    const doc = JSON.parse(body.toString("utf8")) as { token?: unknown; access_token?: unknown };
    token = doc.token ?? doc.access_token;
  } catch (err) {
    throw new RegistryError(`token answer from ${realm.host} is not JSON`, { realm: realm.href }, { cause: err });
  }
  if (typeof token !== "string" || token === "")
    throw new RegistryError(`token answer from ${realm.host} has no token`, { realm: realm.href });
  return `Bearer ${token}`;
}
