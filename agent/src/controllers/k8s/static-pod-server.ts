// Serves every StaticPod to the kubelet (its staticPodURL) as one PodList YAML over
// HTTP on a loopback port of the kernel's choosing, and publishes that URL as
// StaticPodServerStatus. Talos's StaticPodServerController.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { SystemError } from "../../errors.js";
import { marshalGoYaml } from "../../resources/go-yaml.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  K8S_NAMESPACE,
  StaticPodServerStatusId,
  StaticPodServerStatusType,
  StaticPodType,
  type StaticPodServerStatusSpec,
  type StaticPodSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import { goYamlOrdered, type Unstructured } from "../../resources/unstructured.js";

export class StaticPodServerError extends SystemError {}

/**
 * The list as Talos's yaml.v3 encodes its podList struct: the struct has JSON tags
 * only, so its keys are the lower-cased field names, in field order.
 */
export function podListYaml(pods: readonly Unstructured[]): string {
  return marshalGoYaml({ kind: "PodList", items: pods.map(goYamlOrdered), apiversion: "v1" });
}

export class StaticPodServerController implements Controller {
  readonly name = "k8s.StaticPodServerController";
  readonly inputs = [{ namespace: K8S_NAMESPACE, type: StaticPodType, kind: "weak" as const }];
  readonly outputs = [{ type: StaticPodServerStatusType }];

  private server: http.Server | undefined;
  /** undefined until the first list is built: the kubelet gets a 500 until then. */
  private podList: string | undefined;
  private readonly versions = new Map<string, number>();

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.podList = this.buildPodList(ctx);
    if (!this.server) {
      const url = await this.listen(ctx.signal);
      ctx.modify<StaticPodServerStatusSpec>(K8S_NAMESPACE, StaticPodServerStatusType, StaticPodServerStatusId, () => ({
        url,
      }));
    }
  }

  private buildPodList(ctx: ControllerContext): string {
    const pods = ctx
      .list<StaticPodSpec>(K8S_NAMESPACE, StaticPodType)
      .sort((a, b) => (a.metadata.id < b.metadata.id ? -1 : 1));
    const seen = new Set<string>();
    for (const { metadata } of pods) {
      seen.add(metadata.id);
      const old = this.versions.get(metadata.id);
      if (old === metadata.version) continue;
      this.versions.set(metadata.id, metadata.version);
      if (old === undefined) ctx.log.info("rendered new static pod", { id: metadata.id });
      else
        ctx.log.info("rendered updated static pod", {
          id: metadata.id,
          old_version: String(old),
          new_version: String(metadata.version),
        });
    }
    for (const id of this.versions.keys()) {
      if (seen.has(id)) continue;
      ctx.log.info("removed static pod", { id });
      this.versions.delete(id);
    }
    return podListYaml(pods.map((p) => p.spec.pod));
  }

  /** Starts the server on 127.0.0.1:0 (closed when `signal` aborts); its URL. */
  private async listen(signal: AbortSignal): Promise<string> {
    const server = http.createServer((_req, res) => {
      if (this.podList === undefined) {
        res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff" });
        res.end("Internal Server Error\n");
        return;
      }
      res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8" });
      res.end(this.podList);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err) =>
        reject(
          new StaticPodServerError("failed to create listener for serving static pod manifests", {}, { cause: err }),
        ),
      );
      server.listen(0, "127.0.0.1", resolve);
    });
    signal.addEventListener("abort", () => server.close(), { once: true });
    this.server = server;
    // A TCP listener's address() is an AddressInfo (a string only for pipes and sockets).
    const { address, port } = server.address() as AddressInfo;
    return `http://${address}:${port}`;
  }
}
