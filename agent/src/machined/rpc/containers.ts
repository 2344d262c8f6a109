// Containers, Stats and Restart over the system containerd, with Talos's semantics for its containerd
// driver: containers without a task are left out, status is the task's in capitals, Stats lists
// running tasks only (memory in bytes, CPU in nanoseconds), Restart sends SIGTERM to the task.
// The CRI driver (-k) asks the CRI containerd's runtime.v1 API, as Talos's CRI inspector.
import { ConflictError, InvalidInputError, NotFoundError, UnimplementedError } from "../../errors.js";
import { criContainer, criPods } from "../../services/cri/inspector.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { CriClient } from "../../sys/cri/client.js";
import { decodeMessage } from "../../sys/containerd/protos.js";
import { TaskStatus, type Any } from "../../sys/containerd/types.js";

/** common.ContainerDriver */
export const ContainerDriver = { CONTAINERD: 0, CRI: 1 } as const;

/** A client of the system containerd in `namespace`; absent when this node runs no containerd. */
export type ContainerdClients = ((namespace: string) => ContainerdClient) | undefined;

/** The CRI containerd, on a node whose config has a cluster (absent: this node runs none). */
export interface CriAccess {
  /** Whether the cri service is Running (its socket answers). */
  running(): boolean;
  /** Its runtime.v1 API. */
  runtime(): CriClient;
  /** Its containerd API in `namespace`. */
  containerd(namespace: string): ContainerdClient;
}

/** Talos's SystemContainerdNamespace: the system containerd's. */
const systemNamespace = "system";

/** Talos's criconstants.K8sContainerdNamespace: the only namespace the CRI driver serves. */
export const k8sNamespace = "k8s.io";

/** The CRI API for a -k request, or FailedPrecondition when no CRI containerd runs here. */
export function criRuntime(cri: CriAccess | undefined, namespace: string | undefined): CriClient {
  if (namespace !== k8sNamespace)
    throw new InvalidInputError("CRI inspector is supported only for K8s namespace", { namespace });
  return runningCri(cri).runtime();
}

/** The CRI containerd when its service runs; FailedPrecondition otherwise. */
export function runningCri(cri: CriAccess | undefined): CriAccess {
  if (!cri) throw new ConflictError("the CRI runtime is not available: this node runs no CRI containerd");
  if (!cri.running()) throw new ConflictError('the CRI runtime is not running: service "cri" is not up');
  return cri;
}

interface ContainerRequest {
  namespace?: string;
  driver?: number;
}

interface ContainerView {
  id: string;
  image: string;
  pid: number;
  status: string;
  metrics?: { memoryUsage: number; cpuUsage: number };
}

/** The containerd driver: namespace `system` is the system containerd's, any other the CRI containerd's (as Talos picks the address). */
function clientFor(clients: ContainerdClients, cri: CriAccess | undefined, req: ContainerRequest): ContainerdClient {
  if (!req.namespace) throw new InvalidInputError("namespace is required");
  if (req.namespace !== systemNamespace && cri) return runningCri(cri).containerd(req.namespace);
  if (!clients) throw new UnimplementedError("this node runs no containerd");
  return clients(req.namespace);
}

async function view(client: ContainerdClient, withMetrics: boolean): Promise<ContainerView[]> {
  const [containers, tasks, images] = await Promise.all([
    client.listContainers(),
    client.listTasks(),
    client.listImages(),
  ]);
  // containerd names a listed task by `id` (its container's id); `container_id` stays empty there.
  const taskOf = new Map(tasks.map((t) => [t.id || t.container_id, t]));
  // Talos shows an image by its digest, resolved to a name when an image of that digest exists.
  const imageNames = new Map(images.map((i) => [i.target.digest, i.name]));
  const digestOf = new Map(images.map((i) => [i.name, i.target.digest]));
  const out: ContainerView[] = [];
  for (const c of containers) {
    const task = taskOf.get(c.id);
    if (!task) continue;
    const digest = c.image ? (digestOf.get(c.image) ?? "") : "";
    const v: ContainerView = {
      id: c.id,
      image: imageNames.get(digest) ?? digest,
      pid: task.pid,
      status: TaskStatus[task.status] ?? "UNKNOWN",
    };
    if (withMetrics && task.status === TaskStatus.RUNNING) {
      const data = await client.taskMetrics(c.id);
      if (data) v.metrics = metricsFrom(data);
    }
    out.push(v);
  }
  return out;
}

/** Memory (bytes) and CPU (ns) from a task's cgroup v1 or v2 statistics, as Talos reads them. */
export function metricsFrom(data: Any): { memoryUsage: number; cpuUsage: number } {
  if (data.type_url.endsWith("io.containerd.cgroups.v1.Metrics")) {
    const m = decodeMessage<{
      cpu?: { usage?: { total: number } };
      memory?: { total_inactive_file: number; usage?: { usage: number } };
    }>("io.containerd.cgroups.V1Metrics", data.value);
    const usage = m.memory?.usage?.usage ?? 0;
    const inactive = m.memory?.total_inactive_file ?? 0;
    return { memoryUsage: inactive < usage ? usage - inactive : 0, cpuUsage: m.cpu?.usage?.total ?? 0 };
  }
  if (data.type_url.endsWith("io.containerd.cgroups.v2.Metrics")) {
    const m = decodeMessage<{ cpu?: { usage_usec: number }; memory?: { usage: number } }>(
      "io.containerd.cgroups.V2Metrics",
      data.value,
    );
    return { memoryUsage: m.memory?.usage ?? 0, cpuUsage: (m.cpu?.usage_usec ?? 0) * 1000 };
  }
  throw new InvalidInputError(`unknown task metrics type ${data.type_url}`);
}

const isCri = (req: ContainerRequest) => req.driver === ContainerDriver.CRI;

export async function containersResponse(
  clients: ContainerdClients,
  cri: CriAccess | undefined,
  req: ContainerRequest,
) {
  if (isCri(req)) {
    // A node that runs no CRI containerd at all has no Kubernetes containers (the support bundle asks anyway).
    if (!cri) return { messages: [{ containers: [] }] };
    const pods = await criPods(criRuntime(cri, req.namespace));
    const containers = pods.flatMap((pod) =>
      pod.containers.map((c) => ({
        namespace: req.namespace,
        id: c.display,
        pod_id: pod.name,
        name: c.name,
        image: c.image,
        pid: c.pid,
        status: c.status,
        network_namespace: c.networkNamespace,
      })),
    );
    return { messages: [{ containers }] };
  }
  const client = clientFor(clients, cri, req);
  const containers = (await view(client, false)).map((c) => ({
    namespace: req.namespace,
    id: c.id,
    pod_id: c.id,
    name: c.id,
    image: c.image,
    pid: c.pid,
    status: c.status,
    network_namespace: "",
  }));
  return { messages: [{ containers }] };
}

export async function statsResponse(clients: ContainerdClients, cri: CriAccess | undefined, req: ContainerRequest) {
  if (isCri(req)) {
    if (!cri) return { messages: [{ stats: [] }] };
    const pods = await criPods(criRuntime(cri, req.namespace));
    const stats = pods.flatMap((pod) =>
      pod.containers.flatMap((c) =>
        c.metrics
          ? [
              {
                namespace: req.namespace,
                id: c.display,
                pod_id: pod.name,
                name: c.name,
                memory_usage: c.metrics.memoryUsage,
                cpu_usage: c.metrics.cpuUsage,
              },
            ]
          : [],
      ),
    );
    return { messages: [{ stats }] };
  }
  const client = clientFor(clients, cri, req);
  const stats = (await view(client, true)).flatMap((c) =>
    c.metrics
      ? [
          {
            namespace: req.namespace,
            id: c.id,
            pod_id: c.id,
            name: c.id,
            memory_usage: c.metrics.memoryUsage,
            cpu_usage: c.metrics.cpuUsage,
          },
        ]
      : [],
  );
  return { messages: [{ stats }] };
}

export async function restartResponse(
  clients: ContainerdClients,
  cri: CriAccess | undefined,
  req: ContainerRequest & { id?: string },
) {
  const id = req.id ?? "";
  if (isCri(req)) {
    // Talos's CRI inspector stops the container (10 s grace) or the pod sandbox; the kubelet starts it again.
    const runtime = criRuntime(cri, req.namespace);
    const c = await criContainer(runtime, id);
    if (!c) throw new NotFoundError(`container "${id}" not found`, { id });
    if (c.isPodSandbox) await runtime.stopPodSandbox(c.id);
    else await runtime.stopContainer(c.id, 10);
    return { messages: [{}] };
  }
  const client = clientFor(clients, cri, req);
  const task = await client.getTask(id).catch((err: unknown) => {
    if (err instanceof NotFoundError) throw new NotFoundError(`container "${id}" not found`, { id }, { cause: err });
    throw err;
  });
  await client.killTask(task.id || id, 15);
  return { messages: [{}] };
}
