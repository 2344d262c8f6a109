// Containers, Stats and Restart over the system containerd, with Talos's semantics for its containerd
// driver: containers without a task are left out, status is the task's in capitals, Stats lists
// running tasks only (memory in bytes, CPU in nanoseconds), Restart sends SIGTERM to the task.
import { InvalidInputError, NotFoundError, UnimplementedError } from "../../errors.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { decodeMessage } from "../../sys/containerd/protos.js";
import { TaskStatus, type Any } from "../../sys/containerd/types.js";

/** common.ContainerDriver */
export const ContainerDriver = { CONTAINERD: 0, CRI: 1 } as const;

/** A client of the system containerd in `namespace`; absent when this node runs no containerd. */
export type ContainerdClients = ((namespace: string) => ContainerdClient) | undefined;

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

function clientFor(clients: ContainerdClients, req: ContainerRequest): ContainerdClient {
  if ((req.driver ?? ContainerDriver.CONTAINERD) === ContainerDriver.CRI) {
    // No CRI runtime runs on this node yet (Kubernetes is not supported).
    throw new UnimplementedError("the CRI driver is not available: this node runs no CRI runtime");
  }
  if (!req.namespace) throw new InvalidInputError("namespace is required");
  if (!clients) throw new UnimplementedError("this node runs no containerd");
  return clients(req.namespace);
}

async function view(client: ContainerdClient, withMetrics: boolean): Promise<ContainerView[]> {
  const [containers, tasks, images] = await Promise.all([client.listContainers(), client.listTasks(), client.listImages()]);
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
    const v: ContainerView = { id: c.id, image: imageNames.get(digest) ?? digest, pid: task.pid, status: TaskStatus[task.status] ?? "UNKNOWN" };
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
    const m = decodeMessage<{ cpu?: { usage?: { total: number } }; memory?: { total_inactive_file: number; usage?: { usage: number } } }>("io.containerd.cgroups.V1Metrics", data.value);
    const usage = m.memory?.usage?.usage ?? 0;
    const inactive = m.memory?.total_inactive_file ?? 0;
    return { memoryUsage: inactive < usage ? usage - inactive : 0, cpuUsage: m.cpu?.usage?.total ?? 0 };
  }
  if (data.type_url.endsWith("io.containerd.cgroups.v2.Metrics")) {
    const m = decodeMessage<{ cpu?: { usage_usec: number }; memory?: { usage: number } }>("io.containerd.cgroups.V2Metrics", data.value);
    return { memoryUsage: m.memory?.usage ?? 0, cpuUsage: (m.cpu?.usage_usec ?? 0) * 1000 };
  }
  throw new InvalidInputError(`unknown task metrics type ${data.type_url}`);
}

/** No CRI runtime runs here, so the CRI driver sees no containers (Talos's CRI lists none before Kubernetes starts any). */
const isCri = (req: ContainerRequest) => req.driver === ContainerDriver.CRI;

export async function containersResponse(clients: ContainerdClients, req: ContainerRequest) {
  if (isCri(req)) return { messages: [{ containers: [] }] };
  const client = clientFor(clients, req);
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

export async function statsResponse(clients: ContainerdClients, req: ContainerRequest) {
  if (isCri(req)) return { messages: [{ stats: [] }] };
  const client = clientFor(clients, req);
  const stats = (await view(client, true)).flatMap((c) =>
    c.metrics ? [{ namespace: req.namespace, id: c.id, pod_id: c.id, name: c.id, memory_usage: c.metrics.memoryUsage, cpu_usage: c.metrics.cpuUsage }] : [],
  );
  return { messages: [{ stats }] };
}

export async function restartResponse(clients: ContainerdClients, req: ContainerRequest & { id?: string }) {
  const client = clientFor(clients, req);
  const id = req.id ?? "";
  const task = await client.getTask(id).catch((err: unknown) => {
    if (err instanceof NotFoundError) throw new NotFoundError(`container "${id}" not found`, { id }, { cause: err });
    throw err;
  });
  await client.killTask(task.id || id, 15);
  return { messages: [{}] };
}
