// StaticPodStatus of every static pod the kubelet runs (config source "file" or
// "http"), id `<namespace>/<name>`, polled from the kubelet's authenticated /pods/
// endpoint with kube-apiserver's kubelet client certificate, as only a control plane
// node holds it. Talos's KubeletStaticPodController.

import { readFile } from "node:fs/promises";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { SystemError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { PemCertAndKey } from "../../resources/codec.js";
import { NodenameType, type NodenameSpec } from "../../resources/catalog/cluster.js";
import { RUNTIME_NAMESPACE, ServiceType, type ServiceSpec } from "../../resources/catalog/runtime.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import {
  K8S_NAMESPACE,
  StaticPodStatusType,
  type StaticPodStatusSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import {
  KubernetesDynamicCertsId,
  KubernetesDynamicCertsType,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  type KubernetesDynamicCertsSpec,
  type KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";
import type { Unstructured } from "../../resources/unstructured.js";

export class KubeletPodsError extends SystemError {}

export interface KubeletStaticPodOptions {
  /** The kubelet's secure API (default https://127.0.0.1:10250). */
  kubeletURL?: string;
  /** The kubelet's own serving certificate when it is self-signed (default /var/lib/kubelet/pki/kubelet.crt). */
  kubeletCertPath?: string;
  /** How often the status is refreshed (default 15 s). */
  pollMs?: number;
}

/** The part of a kubelet /pods/ item read here. */
interface KubeletPod {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  status?: Unstructured;
}

// Where a pod came from; "file" and "http" are static pods, "api" came from kube-apiserver.
const CONFIG_SOURCE = "kubernetes.io/config.source";
const STATIC_SOURCES = new Set(["file", "http"]);

export class KubeletStaticPodController implements Controller {
  readonly name = "k8s.KubeletStaticPodController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: NodenameType, id: "nodename", kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "kubelet", kind: "weak" as const },
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesDynamicCertsType,
      id: KubernetesDynamicCertsId,
      kind: "weak" as const,
    },
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesRootSecretsType,
      id: KubernetesRootSecretsId,
      kind: "weak" as const,
    },
  ];
  readonly outputs = [{ type: StaticPodStatusType }];

  private readonly kubeletURL: string;
  private readonly kubeletCertPath: string;
  private readonly pollMs: number;

  constructor(opts: KubeletStaticPodOptions = {}) {
    this.kubeletURL = opts.kubeletURL ?? "https://127.0.0.1:10250";
    this.kubeletCertPath = opts.kubeletCertPath ?? "/var/lib/kubelet/pki/kubelet.crt";
    this.pollMs = opts.pollMs ?? 15_000;
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!ctx.get<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, "kubelet")?.spec.running) {
      ctx.destroyOthers(K8S_NAMESPACE, StaticPodStatusType, new Set());
      return;
    }
    // Without the control plane's secrets there is no way to ask the kubelet (a worker): statuses stay as they are.
    const issuingCA = ctx.get<KubernetesRootSpec>(SECRETS_NAMESPACE, KubernetesRootSecretsType, KubernetesRootSecretsId)
      ?.spec.issuingCA;
    const client = ctx.get<KubernetesDynamicCertsSpec>(
      SECRETS_NAMESPACE,
      KubernetesDynamicCertsType,
      KubernetesDynamicCertsId,
    )?.spec.apiServerKubeletClient;
    const nodename = ctx.get<NodenameSpec>(K8S_NAMESPACE, NodenameType, "nodename")?.spec.nodename;
    if (!issuingCA || !client || !nodename) return;

    const pods = await this.fetchPods(client, [issuingCA.crt, ...(await this.kubeletCert())], nodename, ctx.signal);
    const seen = new Set<string>();
    for (const pod of pods) {
      if (!STATIC_SOURCES.has(pod.metadata?.annotations?.[CONFIG_SOURCE] ?? "")) continue;
      const id = `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
      seen.add(id);
      ctx.modify<StaticPodStatusSpec>(K8S_NAMESPACE, StaticPodStatusType, id, () => ({ podStatus: pod.status ?? {} }));
    }
    ctx.destroyOthers(K8S_NAMESPACE, StaticPodStatusType, seen);
    ctx.requeueAfter(this.pollMs);
  }

  /** The kubelet's self-signed serving certificate, trusted besides the cluster CA when present. */
  private async kubeletCert(): Promise<string[]> {
    try {
      return [await readFile(this.kubeletCertPath, "utf8")];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new KubeletPodsError("error reading kubelet certificate", { path: this.kubeletCertPath }, { cause: err });
    }
  }

  private fetchPods(client: PemCertAndKey, ca: string[], nodename: string, signal: AbortSignal): Promise<KubeletPod[]> {
    const url = new URL("/pods/", this.kubeletURL);
    const fail = (message: string, cause?: unknown) =>
      new KubeletPodsError(`error fetching pod status: ${message}`, { url: url.href }, { cause });
    return new Promise((resolve, reject) => {
      // The kubelet's certificate names the node; SNI carries no IP, so an IP node name is only checked against the certificate.
      const identity = net.isIP(nodename)
        ? { checkServerIdentity: (_host: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(nodename, cert) }
        : { servername: nodename };
      const req = https.get(
        url,
        { cert: client.crt, key: client.key, ca, ...identity, timeout: 30_000, signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", (err) => reject(fail(err.message, err)));
          res.on("end", () => {
            const body = Buffer.concat(chunks).toString("utf8");
            if (res.statusCode !== 200) return reject(fail(`the kubelet answered ${res.statusCode}: ${body.trim()}`));
            try {
              // The kubelet's /pods/ answers a v1 PodList; only the fields of KubeletPod are read.
              resolve((JSON.parse(body) as { items?: KubeletPod[] }).items ?? []);
            } catch (err) {
              reject(fail("the kubelet's answer is not JSON", err));
            }
          });
        },
      );
      req.on("timeout", () => req.destroy(fail("timed out after 30s")));
      req.on("error", (err) => reject(err instanceof KubeletPodsError ? err : fail(err.message, err)));
    });
  }
}
