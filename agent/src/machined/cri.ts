import { existsSync } from "node:fs";
import type { ConfigBundle } from "../config/bundle.js";
import { CriRegistryConfigController } from "../controllers/cri/registry-config.js";
import type { ResourceState } from "../resources/state.js";
import { criPaths, type CriPaths } from "../services/cri/config.js";
import { stopAllPods, type PodStopAction } from "../services/cri/stop-pods.js";
import { criService } from "../services/definitions/cri.js";
import type { ServiceDefinition, ServiceStatus } from "../services/service.js";
import { boundingCapabilities } from "../sys/capabilities.js";
import { ContainerdClient } from "../sys/containerd/client.js";
import { CriClient } from "../sys/cri/client.js";
import type { Paths } from "../sys/paths.js";
import type { CriAccess } from "./rpc/containers.js";

export interface CriOptions {
  /** The containerd program with the CRI plugin (a node: /usr/bin/containerd). */
  command: string;
}

/** The CRI containerd: its service, the controller writing its registry configuration, and clients of it. */
export interface CriRuntime {
  readonly paths: CriPaths;
  readonly controller: CriRegistryConfigController;
  /** The `cri` service when `config` has a cluster (a controlplane or worker), else none (as Talos starts it). */
  services(config: ConfigBundle | undefined): ServiceDefinition[];
  /** The client of this containerd machined shares (namespace `k8s.io`; derive others with inNamespace). */
  containerd(): ContainerdClient;
  /** Stops (or removes) every pod, when this containerd's socket is there (Talos's check). */
  stopPods(action: PodStopAction): Promise<void>;
  /** What the API handlers use; `status` tells whether the service runs. */
  access(status: (id: string) => ServiceStatus | undefined): CriAccess;
  close(): void;
}

export function criRuntime(paths: Paths, state: ResourceState, opts: CriOptions): CriRuntime {
  const p = criPaths(paths);
  // One connection each, shared by machined (the namespace is per call's metadata).
  const containerd = new ContainerdClient(p.socket, "k8s.io");
  const runtime = new CriClient(p.socket);
  const client = (namespace: string) =>
    namespace === containerd.namespace ? containerd : containerd.inNamespace(namespace);
  return {
    paths: p,
    controller: new CriRegistryConfigController(p, {
      restrictOomScoreAdj: !boundingCapabilities().has("CAP_SYS_RESOURCE"),
    }),
    services: (config) =>
      config?.v1alpha1()?.cluster
        ? [criService({ paths: p, command: opts.command, client: () => containerd, state })]
        : [],
    containerd: () => containerd,
    stopPods: async (action) => {
      if (existsSync(p.socket)) await stopAllPods(runtime, action);
    },
    access: (status) => ({
      running: () => status("cri")?.state === "Running",
      runtime: () => runtime,
      containerd: client,
    }),
    close: () => {
      containerd.close();
      runtime.close();
    },
  };
}
