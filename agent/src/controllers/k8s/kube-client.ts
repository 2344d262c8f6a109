// A small Kubernetes REST client: JSON over HTTPS with a client certificate, and the
// path of a kind found through the API server's discovery documents (/api/v1,
// /apis/<group>/<version>), as client-go's RESTMapper finds it for Talos's apply.

import https from "node:https";
import { BasaltError } from "../../errors.js";
import type { KubernetesObject } from "../../resources/catalog/k8s-manifests.js";

/** Where the API server is and how to authenticate to it (PEM text). */
export interface KubeCredentials {
  server: string;
  ca: string;
  cert: string;
  key: string;
}

/** The API server answered with an error status (the Status object's reason and message). */
export class KubeApiError extends BasaltError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message, { status, reason });
  }
}

/** The API server could not be reached or did not answer (connection refused, TLS, timeout). */
export class KubeUnreachableError extends BasaltError {}

/** No resource of this kind is served at this group/version (client-go's NoKindMatchError). */
export class KubeNoMatchError extends BasaltError {}

/** Where objects of a kind live: the resource name and whether it is namespaced. */
export interface ResourceMapping {
  groupVersion: string;
  resource: string;
  namespaced: boolean;
}

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

const REQUEST_TIMEOUT_MS = 15_000;

export class KubeClient {
  private readonly agent: https.Agent;
  private readonly discovered = new Map<string, APIResource[]>();

  constructor(private readonly creds: KubeCredentials) {
    this.agent = new https.Agent({ ca: creds.ca, cert: creds.cert, key: creds.key, keepAlive: true });
  }

  close(): void {
    this.agent.destroy();
  }

  /** One request; a JSON body in and out. Error statuses throw KubeApiError. */
  async request<T = unknown>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const url = new URL(path, this.creds.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = https.request(
        url,
        {
          method,
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
          headers: {
            Accept: "application/json",
            ...(payload ? { "Content-Type": "application/json", "Content-Length": payload.length } : {}),
          },
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
      req.on("error", (err) =>
        reject(new KubeUnreachableError(`${method} ${url.href}: ${err.message}`, { url: url.href }, { cause: err })),
      );
      req.end(payload);
    });
    const parsed = text === "" ? undefined : safeJson(text);
    if (status < 200 || status >= 300) {
      const st = (parsed ?? {}) as { reason?: string; message?: string };
      throw new KubeApiError(
        status,
        st.reason ?? "",
        `${method} ${url.pathname}: ${status} ${st.message ?? text.trim()}`,
      );
    }
    return parsed as T;
  }

  private async resources(groupVersion: string, fresh: boolean): Promise<APIResource[]> {
    const cached = this.discovered.get(groupVersion);
    if (cached && !fresh) return cached;
    const path = groupVersion.includes("/") ? `/apis/${groupVersion}` : `/api/${groupVersion}`;
    try {
      const list = await this.request<{ resources?: APIResource[] }>("GET", path);
      const resources = list.resources ?? [];
      this.discovered.set(groupVersion, resources);
      return resources;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404)
        throw new KubeNoMatchError(`no matches for group/version ${groupVersion}`, { groupVersion }, { cause: err });
      throw err;
    }
  }

  /**
   * The resource serving `kind` at `apiVersion`. A kind not in the cached discovery is looked
   * up again once (a CRD created a moment ago), as client-go's deferred mapper resets.
   */
  async mapping(apiVersion: string, kind: string): Promise<ResourceMapping> {
    for (const fresh of [false, true]) {
      const found = (await this.resources(apiVersion, fresh)).find((r) => r.kind === kind && !r.name.includes("/"));
      if (found) return { groupVersion: apiVersion, resource: found.name, namespaced: found.namespaced };
    }
    throw new KubeNoMatchError(`no matches for kind "${kind}" in version "${apiVersion}"`, { apiVersion, kind });
  }

  /** The collection path of a mapping (namespace ignored for cluster-scoped kinds). */
  static collectionPath(m: ResourceMapping, namespace?: string): string {
    const base = m.groupVersion.includes("/") ? `/apis/${m.groupVersion}` : `/api/${m.groupVersion}`;
    return m.namespaced && namespace
      ? `${base}/namespaces/${encodeURIComponent(namespace)}/${m.resource}`
      : `${base}/${m.resource}`;
  }

  /** GET of a list, e.g. `/api/v1/nodes`, with an optional label selector. */
  async list(path: string, labelSelector?: string, signal?: AbortSignal): Promise<KubernetesObject[]> {
    const q = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
    const out = await this.request<{ items?: KubernetesObject[] }>("GET", path + q, undefined, signal);
    return out.items ?? [];
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
