// A client of Kubernetes' CRI (runtime.v1) on a containerd's socket: the calls machined makes to
// observe pods and containers, and the ones that create them (tests, a kubelet's work).
import * as grpc from "@grpc/grpc-js";
import { containerdError } from "../containerd/client.js";
import { containerdService } from "../containerd/protos.js";

/** runtime.v1.PodSandboxState, runtime.v1.ContainerState: their names as Talos prints them. */
export const PodSandboxStateName: Record<number, string> = { 0: "SANDBOX_READY", 1: "SANDBOX_NOTREADY" };
export const ContainerStateName: Record<number, string> = {
  0: "CONTAINER_CREATED",
  1: "CONTAINER_RUNNING",
  2: "CONTAINER_EXITED",
  3: "CONTAINER_UNKNOWN",
};

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandbox {
  id: string;
  metadata?: PodSandboxMetadata;
  state: number;
  created_at: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** NamespaceMode: POD 0, CONTAINER 1, NODE 2, TARGET 3. */
export interface PodSandboxStatus {
  id: string;
  state: number;
  linux?: { namespaces?: { options?: { network: number } } };
}

export interface CriContainer {
  id: string;
  pod_sandbox_id: string;
  metadata?: { name: string; attempt: number };
  image_ref: string;
  state: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface CriContainerStatus {
  id: string;
  state: number;
  log_path: string;
  exit_code: number;
}

export interface CriContainerStats {
  attributes?: { id: string };
  cpu?: { usage_core_nano_seconds?: { value: number } };
  memory?: { working_set_bytes?: { value: number } };
}

export interface CriImage {
  id: string;
  repo_tags: string[];
  repo_digests: string[];
  size: number;
}

type Unary = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;

/** Plain objects in and out, shaped as agent/containerd-api/cri-runtime-v1.proto declares them. */
export class CriClient {
  private channel: grpc.Channel | undefined;
  private readonly stubs = new Map<string, Record<string, unknown>>();

  constructor(readonly socket: string) {}

  private stub(service: "RuntimeService" | "ImageService"): Record<string, unknown> {
    let s = this.stubs.get(service);
    if (!s) {
      this.channel ??= new grpc.Channel(`unix:${this.socket}`, grpc.credentials.createInsecure(), {
        "grpc.max_receive_message_length": 16 * 1024 * 1024,
      });
      const Ctor = grpc.makeGenericClientConstructor(containerdService(`runtime.v1.${service}`), service);
      // The generic constructor's instances carry one method per RPC, looked up by name below.
      s = new Ctor(`unix:${this.socket}`, grpc.credentials.createInsecure(), {
        channelOverride: this.channel,
      }) as unknown as Record<string, unknown>;
      this.stubs.set(service, s);
    }
    return s;
  }

  private call<T>(
    service: "RuntimeService" | "ImageService",
    method: string,
    req: object,
    timeoutMs = 30_000,
  ): Promise<T> {
    const s = this.stub(service);
    const fn = s[method] as Unary;
    return new Promise((resolve, reject) => {
      fn.call(s, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        // The response is the decoded message declared for this method; T names it.
        if (err) reject(containerdError(`CRI ${service}.${method}`, err));
        else resolve(res as T);
      });
    });
  }

  close(): void {
    this.channel?.close();
    this.channel = undefined;
    this.stubs.clear();
  }

  version(): Promise<{ version: string; runtime_name: string; runtime_version: string; runtime_api_version: string }> {
    return this.call("RuntimeService", "Version", {});
  }

  /** The runtime's conditions; verbose adds `info` (containerd: its CRI plugin's effective `config` as JSON). */
  status(verbose = true): Promise<{
    status?: { conditions: { type: string; status: boolean; reason: string; message: string }[] };
    info: Record<string, string>;
  }> {
    return this.call("RuntimeService", "Status", { verbose });
  }

  async listPodSandbox(filter: object = {}): Promise<PodSandbox[]> {
    return (await this.call<{ items: PodSandbox[] }>("RuntimeService", "ListPodSandbox", { filter })).items;
  }

  podSandboxStatus(id: string, verbose = true): Promise<{ status?: PodSandboxStatus; info: Record<string, string> }> {
    return this.call("RuntimeService", "PodSandboxStatus", { pod_sandbox_id: id, verbose });
  }

  async runPodSandbox(config: object, timeoutMs?: number): Promise<string> {
    return (await this.call<{ pod_sandbox_id: string }>("RuntimeService", "RunPodSandbox", { config }, timeoutMs))
      .pod_sandbox_id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.call("RuntimeService", "StopPodSandbox", { pod_sandbox_id: id });
  }

  async removePodSandbox(id: string): Promise<void> {
    await this.call("RuntimeService", "RemovePodSandbox", { pod_sandbox_id: id });
  }

  async createContainer(podSandboxId: string, config: object, sandboxConfig: object): Promise<string> {
    return (
      await this.call<{ container_id: string }>("RuntimeService", "CreateContainer", {
        pod_sandbox_id: podSandboxId,
        config,
        sandbox_config: sandboxConfig,
      })
    ).container_id;
  }

  async startContainer(id: string): Promise<void> {
    await this.call("RuntimeService", "StartContainer", { container_id: id });
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    await this.call(
      "RuntimeService",
      "StopContainer",
      { container_id: id, timeout: timeoutSeconds },
      (timeoutSeconds + 30) * 1000,
    );
  }

  async removeContainer(id: string): Promise<void> {
    await this.call("RuntimeService", "RemoveContainer", { container_id: id });
  }

  async listContainers(filter: object = {}): Promise<CriContainer[]> {
    return (await this.call<{ containers: CriContainer[] }>("RuntimeService", "ListContainers", { filter })).containers;
  }

  containerStatus(id: string, verbose = true): Promise<{ status?: CriContainerStatus; info: Record<string, string> }> {
    return this.call("RuntimeService", "ContainerStatus", { container_id: id, verbose });
  }

  async listContainerStats(filter: object = {}): Promise<CriContainerStats[]> {
    return (await this.call<{ stats: CriContainerStats[] }>("RuntimeService", "ListContainerStats", { filter })).stats;
  }

  async listImages(): Promise<CriImage[]> {
    return (await this.call<{ images: CriImage[] }>("ImageService", "ListImages", { filter: {} })).images;
  }

  async pullImage(image: string, auth?: { username: string; password: string }, timeoutMs = 120_000): Promise<string> {
    return (
      await this.call<{ image_ref: string }>(
        "ImageService",
        "PullImage",
        { image: { image }, ...(auth ? { auth } : {}) },
        timeoutMs,
      )
    ).image_ref;
  }
}
