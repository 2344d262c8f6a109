// k8s.ManifestApplyController: once the Kubernetes secrets exist, etcd is healthy and
// the API server answers (through the localhost admin kubeconfig),
// creates every object of the Manifests (ids in order; namespaces, then CRDs, then the
// rest) that does not exist yet, never updating one that does, under the cluster-wide
// lock Talos holds in etcd; then publishes ManifestStatus `manifests`. An object the
// API server refuses (unknown kind, invalid) is reported and the others still apply;
// an unreachable API server stops the run and the runtime retries it with backoff.

import { BasaltError, describeError } from "../../errors.js";
import {
  CONTROLPLANE_NAMESPACE,
  ManifestStatusId,
  ManifestStatusType,
  ManifestType,
  type KubernetesObject,
  type ManifestSpec,
  type ManifestStatusSpec,
} from "../../resources/catalog/k8s-manifests.js";
import { RUNTIME_NAMESPACE, ServiceType } from "../../resources/catalog/runtime.js";
import {
  KubernetesSecretsId,
  KubernetesSecretsType,
  type KubernetesCertsSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { Logger } from "../../log.js";
import { KubeApiError, KubeClient, KubeNoMatchError } from "./kube-client.js";
import { credentialsFromKubeconfig } from "./kubeconfig-credentials.js";

/** Talos's etcd mutex for the apply (constants.EtcdTalosManifestApplyMutex). */
export const MANIFEST_APPLY_LOCK_KEY = "talos:v1:manifestApplyMutex";

/** A cluster-wide mutex: one control plane applies at a time (Talos: an etcd concurrency.Mutex). */
export interface ClusterLock {
  withLock<T>(key: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T>;
}

/** A lock within this process only: for tests and a single control plane without an etcd client. */
export class LocalLock implements ClusterLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async withLock<T>(key: string, _signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(fn);
    this.tails.set(key, run);
    return run;
  }
}

/** Some objects could not be created; the others were. */
export class ManifestApplyError extends BasaltError {
  constructor(readonly failures: string[]) {
    super(`error applying manifests: ${failures.join("; ")}`, { failures });
  }
}

const isNamespace = (o: KubernetesObject): boolean => o.kind === "Namespace" && o.apiVersion === "v1";
const isCRD = (o: KubernetesObject): boolean =>
  o.kind === "CustomResourceDefinition" && String(o.apiVersion ?? "").startsWith("apiextensions.k8s.io/");
const nameOf = (o: KubernetesObject): string => String((o.metadata as { name?: unknown } | undefined)?.name ?? "");

/** Namespaces first (by name), then CRDs (by name), everything else in manifest order. */
export function applyOrder(objects: readonly KubernetesObject[]): KubernetesObject[] {
  const rank = (o: KubernetesObject): number => (isNamespace(o) ? 0 : isCRD(o) ? 1 : 2);
  return objects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => rank(a.o) - rank(b.o) || (rank(a.o) < 2 ? nameOf(a.o).localeCompare(nameOf(b.o)) : 0) || a.i - b.i)
    .map(({ o }) => o);
}

/** Talos's name of an object in messages: group/version/kind/name. */
function objectName(o: KubernetesObject): string {
  const apiVersion = String(o.apiVersion ?? "");
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  return `${group}/${version}/${String(o.kind ?? "")}/${nameOf(o)}`;
}

/** Creates what is missing; returns the names created. Throws ManifestApplyError after trying every object. */
export async function applyObjects(
  client: KubeClient,
  objects: readonly KubernetesObject[],
  log: Logger,
  signal?: AbortSignal,
): Promise<string[]> {
  const failures: string[] = [];
  const created: string[] = [];
  for (const original of applyOrder(objects)) {
    const name = objectName(original);
    let mapping;
    try {
      mapping = await client.mapping(String(original.apiVersion ?? ""), String(original.kind ?? ""));
    } catch (err) {
      // A kind the server does not serve is the manifest's problem; anything else (connection) stops the run.
      if (err instanceof KubeNoMatchError || (err instanceof KubeApiError && [404, 422].includes(err.status))) {
        failures.push(`error creating mapping for object ${name}: ${describeError(err)}`);
        continue;
      }
      throw err;
    }
    const obj = structuredClone(original);
    const metadata = (obj.metadata ??= {}) as { namespace?: string };
    if (mapping.namespaced && !metadata.namespace) metadata.namespace = "default";
    const collection = KubeClient.collectionPath(mapping, metadata.namespace);
    try {
      await client.request("GET", `${collection}/${encodeURIComponent(nameOf(obj))}`, undefined, signal);
      continue; // exists: never updated
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
    try {
      await client.request("POST", `${collection}?fieldManager=talos`, obj, signal);
      created.push(name);
      log.info(`created ${name}`);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 409) continue;
      if (err instanceof KubeApiError && [400, 405, 422].includes(err.status)) {
        failures.push(`error creating ${name}: ${describeError(err)}`);
        continue;
      }
      throw err;
    }
  }
  if (failures.length > 0) throw new ManifestApplyError(failures);
  return created;
}

export class ManifestApplyController implements Controller {
  readonly name = "k8s.ManifestApplyController";
  readonly inputs = [
    { namespace: SECRETS_NAMESPACE, type: KubernetesSecretsType, id: KubernetesSecretsId, kind: "weak" as const },
    { namespace: CONTROLPLANE_NAMESPACE, type: ManifestType, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "etcd", kind: "weak" as const },
  ];
  readonly outputs = [{ type: ManifestStatusType }];

  constructor(
    private readonly lock: ClusterLock,
    /** Reports a failed apply (machined: an event and a log line); the runtime retries. */
    private readonly onFailure?: (err: unknown) => void,
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    // The localhost admin kubeconfig (https://localhost:<localAPIServerPort>) the secrets controllers render.
    const secrets = ctx.get<KubernetesCertsSpec>(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId)?.spec;
    if (!secrets) return;
    // The lock lives in etcd: nothing to do before etcd is healthy.
    const etcd = ctx.get<{ healthy: boolean }>(RUNTIME_NAMESPACE, ServiceType, "etcd");
    if (!etcd?.spec.healthy) return;
    const creds = credentialsFromKubeconfig(secrets.localhostAdminKubeconfig);
    const manifests = ctx
      .list<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType)
      .sort((a, b) => (a.metadata.id < b.metadata.id ? -1 : a.metadata.id > b.metadata.id ? 1 : 0));
    if (manifests.length > 0) {
      const client = new KubeClient(creds);
      try {
        await this.lock.withLock(MANIFEST_APPLY_LOCK_KEY, ctx.signal, () =>
          applyObjects(
            client,
            manifests.flatMap((m) => m.spec.items),
            ctx.log,
            ctx.signal,
          ),
        );
      } catch (err) {
        this.onFailure?.(err);
        throw err;
      } finally {
        client.close();
      }
    }
    const applied = manifests.map((m) => m.metadata.id);
    ctx.modify<ManifestStatusSpec>(CONTROLPLANE_NAMESPACE, ManifestStatusType, ManifestStatusId, () => ({
      manifestsApplied: applied,
    }));
  }
}
