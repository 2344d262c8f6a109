import http from "node:http";
import https from "node:https";
import { InvalidInputError, NotFoundError, PermissionDeniedError, SystemError } from "../../errors.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";

export type Registries = NonNullable<NonNullable<V1Alpha1Config["machine"]>["registries"]>;

/** One place to fetch a registry's content from: a mirror endpoint or the registry itself. */
export interface RegistryEndpoint {
  /** The API base, e.g. `https://registry-1.docker.io/v2` (a mirror's path kept, /v2 added unless overridePath). */
  base: URL;
  tls: https.AgentOptions;
  credentials?: { username: string; password: string };
}

/** docker.io's registry host (containerd's docker.DefaultHost). */
function defaultHost(host: string): string {
  return host === "docker.io" ? "registry-1.docker.io" : host;
}

/**
 * The endpoints to try for `host`, in order, as Talos resolves them from `.machine.registries`: the
 * host's mirror endpoints (or the `*` mirror's), else the registry itself over HTTPS; TLS and auth
 * come from `.machine.registries.config` keyed by each endpoint's host.
 */
export function registryEndpoints(reg: Registries | undefined, host: string): RegistryEndpoint[] {
  const mirror = reg?.mirrors?.[host] ?? reg?.mirrors?.["*"];
  const urls = mirror?.endpoints?.length ? mirror.endpoints : [`https://${defaultHost(host)}`];
  const overridePath = mirror?.overridePath === true;
  return urls.map((raw) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch (err) {
      throw new InvalidInputError(`error parsing endpoint "${raw}" for host "${host}"`, { host }, { cause: err });
    }
    const cfg = reg?.config?.[u.host];
    if (u.protocol !== "https:" && cfg?.tls)
      throw new InvalidInputError(`TLS config specified for non-HTTPS registry: "${u.host}"`);
    let p = u.pathname === "/" ? "" : u.pathname.replace(/\/+$/, "");
    if (!overridePath && !p.endsWith("/v2")) p += "/v2";
    u.pathname = p;
    const tls: https.AgentOptions = {};
    if (cfg?.tls?.insecureSkipVerify) tls.rejectUnauthorized = false;
    if (cfg?.tls?.ca) tls.ca = Buffer.from(cfg.tls.ca, "base64");
    if (cfg?.tls?.clientIdentity?.crt && cfg.tls.clientIdentity.key) {
      tls.cert = Buffer.from(cfg.tls.clientIdentity.crt, "base64");
      tls.key = Buffer.from(cfg.tls.clientIdentity.key, "base64");
    }
    const credentials = cfg?.auth ? authCredentials(cfg.auth, u.host) : undefined;
    return { base: u, tls, ...(credentials ? { credentials } : {}) };
  });
}

type Auth = NonNullable<NonNullable<Registries["config"]>[string]["auth"]>;

/** User and password from an auth block (Talos's PrepareAuth): username/password, identityToken, or base64 `auth`. */
export function authCredentials(auth: Auth, host: string): { username: string; password: string } | undefined {
  if (auth.username) return { username: auth.username, password: auth.password ?? "" };
  if (auth.identityToken) return { username: "", password: auth.identityToken };
  if (auth.auth) {
    const decoded = Buffer.from(auth.auth, "base64").toString("utf8");
    const i = decoded.indexOf(":");
    if (i < 0) throw new InvalidInputError(`invalid decoded auth for "${host}"`);
    return { username: decoded.slice(0, i), password: decoded.slice(i + 1).replace(/\0+$/, "") };
  }
  return undefined;
}

export interface FetchedBody {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: http.IncomingMessage;
}

function get(url: URL, headers: Record<string, string>, tls: https.AgentOptions): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === "https:" ? https : http;
    const req = mod.get(url, { headers, ...(url.protocol === "https:" ? tls : {}), timeout: 60_000 }, resolve);
    req.on("timeout", () => req.destroy(new SystemError(`GET ${url.href} timed out`)));
    req.on("error", reject);
  });
}

async function text(res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** A client of one endpoint for one repository, authenticating as the registry asks (Basic, or a Bearer token). */
export class RegistryClient {
  private authorization: string | undefined;

  constructor(
    readonly endpoint: RegistryEndpoint,
    private readonly repository: string,
  ) {}

  /** GET `<base>/<repository>/<kind>/<ref>`; follows redirects; rejects on anything but 200. */
  async fetch(kind: "manifests" | "blobs", ref: string, accept: string[] = []): Promise<FetchedBody> {
    const url = new URL(`${this.endpoint.base.href.replace(/\/$/, "")}/${this.repository}/${kind}/${ref}`);
    let res = await this.get(url, accept, true);
    if (res.statusCode === 401) {
      const challenge = res.headers["www-authenticate"] ?? "";
      res.resume();
      this.authorization = await this.authorize(challenge);
      res = await this.get(url, accept, true);
    }
    for (let hops = 0; res.statusCode && [301, 302, 303, 307, 308].includes(res.statusCode) && hops < 5; hops++) {
      const next = new URL(res.headers.location ?? "", url);
      res.resume();
      // A redirect elsewhere (a storage bucket) carries no registry credentials.
      res = await this.get(next, accept, next.host === url.host);
    }
    if (res.statusCode !== 200) {
      const body = await text(res).catch(() => "");
      const what = `${kind === "manifests" ? "manifest" : "blob"} ${this.repository}:${ref} from ${this.endpoint.base.host}`;
      if (res.statusCode === 404) throw new NotFoundError(`${what}: not found`, { status: 404 });
      if (res.statusCode === 401 || res.statusCode === 403)
        throw new PermissionDeniedError(`${what}: ${res.statusCode} ${body.trim()}`, { status: res.statusCode });
      throw new SystemError(`${what}: HTTP ${res.statusCode} ${body.trim()}`, { status: res.statusCode });
    }
    return { status: 200, headers: res.headers, body: res };
  }

  private get(url: URL, accept: string[], withAuth: boolean): Promise<http.IncomingMessage> {
    const headers: Record<string, string> = {};
    if (accept.length) headers.accept = accept.join(", ");
    if (withAuth && this.authorization) headers.authorization = this.authorization;
    return get(url, headers, this.endpoint.tls);
  }

  private async authorize(challenge: string): Promise<string> {
    const creds = this.endpoint.credentials;
    const basic = creds ? `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString("base64")}` : undefined;
    const scheme = challenge.split(" ")[0]?.toLowerCase();
    if (scheme === "basic") {
      if (!basic)
        throw new PermissionDeniedError(
          `${this.endpoint.base.host} asks for credentials and none are configured (.machine.registries.config)`,
        );
      return basic;
    }
    if (scheme !== "bearer")
      throw new PermissionDeniedError(
        `${this.endpoint.base.host}: unsupported authentication challenge "${challenge}"`,
      );
    const params = Object.fromEntries([...challenge.slice(7).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (!params.realm) throw new PermissionDeniedError(`${this.endpoint.base.host}: bearer challenge without a realm`);
    const tokenUrl = new URL(params.realm);
    if (params.service) tokenUrl.searchParams.set("service", params.service);
    tokenUrl.searchParams.set("scope", params.scope ?? `repository:${this.repository}:pull`);
    const res = await get(tokenUrl, basic ? { authorization: basic } : {}, this.endpoint.tls);
    const body = await text(res);
    if (res.statusCode !== 200)
      throw new PermissionDeniedError(`token from ${tokenUrl.host}: HTTP ${res.statusCode} ${body.trim()}`);
    const parsed = JSON.parse(body) as { token?: string; access_token?: string };
    const token = parsed.token ?? parsed.access_token;
    if (!token) throw new PermissionDeniedError(`token from ${tokenUrl.host}: no token in the reply`);
    return `Bearer ${token}`;
  }
}
