// Pods and their containers as Talos's CRI inspector reports them (internal/pkg/containers/cri):
// each ready pod sandbox first, shown as `namespace/pod`, then its containers, shown as
// `namespace/pod:name:<12 characters of the id>`; images named by their first tag; CPU and memory
// from ListContainerStats (a sandbox counts as using none). A pod or container removed between the
// lists and its status call is left out, as a listing a moment later would leave it (Talos fails
// the whole call then, which the kubelet's garbage collection makes a matter of luck).
import path from "node:path";
import { unlessGone } from "./unless-gone.js";
import {
  ContainerStateName,
  PodSandboxStateName,
  type CriClient,
  type CriContainer,
  type PodSandbox,
} from "../../sys/cri/client.js";

export interface CriContainerView {
  /** `ns/pod` for a sandbox, `ns/pod:name:abcdef123456` for a container (what -k ids name). */
  display: string;
  name: string;
  id: string;
  podName: string;
  image: string;
  pid: number;
  status: string;
  networkNamespace: string;
  isPodSandbox: boolean;
  logPath: string;
  metrics?: { memoryUsage: number; cpuUsage: number };
}

export interface CriPodView {
  name: string;
  containers: CriContainerView[];
}

const readyFilter = { state: { state: 0 } };

/** containerd's verbose `info` JSON: the task's pid, the sandbox's image and runtime spec. */
interface VerboseInfo {
  pid?: number;
  image?: string;
  runtimeSpec?: { linux?: { namespaces?: { type?: string; path?: string }[] } };
}

function parseInfo(info: Record<string, string>): VerboseInfo {
  try {
    // containerd's own JSON; only the fields above are read, each checked before use.
    return JSON.parse(info.info ?? "{}") as VerboseInfo;
  } catch {
    return {};
  }
}

async function sandboxView(cri: CriClient, s: PodSandbox): Promise<CriContainerView> {
  const { status, info } = await cri.podSandboxStatus(s.id);
  const podName = `${s.metadata?.namespace ?? ""}/${s.metadata?.name ?? ""}`;
  const v = parseInfo(info);
  const netns = v.runtimeSpec?.linux?.namespaces?.find((n) => n.type === "network" && typeof n.path === "string")?.path;
  return {
    display: podName,
    name: podName,
    id: s.id,
    podName,
    image: typeof v.image === "string" ? v.image : "",
    pid: typeof v.pid === "number" ? v.pid : 0,
    status: PodSandboxStateName[status?.state ?? s.state] ?? "UNKNOWN",
    networkNamespace: netns ? path.basename(netns) : "",
    isPodSandbox: true,
    logPath: "",
    metrics: { memoryUsage: 0, cpuUsage: 0 },
  };
}

async function containerView(cri: CriClient, c: CriContainer): Promise<CriContainerView> {
  const { status, info } = await cri.containerStatus(c.id);
  const podName = `${c.labels["io.kubernetes.pod.namespace"] ?? ""}/${c.labels["io.kubernetes.pod.name"] ?? ""}`;
  const name = c.metadata?.name ?? "";
  const v = parseInfo(info);
  return {
    display: `${podName}:${name}:${c.id.slice(0, 12)}`,
    name,
    id: c.id,
    podName,
    image: c.image_ref,
    pid: typeof v.pid === "number" ? v.pid : 0,
    status: ContainerStateName[c.state] ?? "UNKNOWN",
    networkNamespace: "",
    isPodSandbox: false,
    logPath: status?.log_path ?? "",
  };
}

/** Every ready pod with its containers (Talos's inspector.Pods). */
export async function criPods(cri: CriClient): Promise<CriPodView[]> {
  const [sandboxes, containers, stats, images] = await Promise.all([
    cri.listPodSandbox(readyFilter),
    cri.listContainers(),
    cri.listContainerStats(),
    cri.listImages(),
  ]);
  const imageNames = new Map(images.filter((i) => i.repo_tags.length > 0).map((i) => [i.id, i.repo_tags[0]!]));
  const statsOf = new Map(stats.map((s) => [s.attributes?.id ?? "", s]));
  const pods = new Map<string, CriPodView>();
  for (const s of sandboxes) {
    const view = await unlessGone(sandboxView(cri, s));
    if (!view) continue;
    view.image = imageNames.get(view.image) ?? view.image;
    pods.set(s.id, { name: view.podName, containers: [view] });
  }
  for (const c of containers) {
    const pod = pods.get(c.pod_sandbox_id);
    if (!pod) continue;
    const view = await unlessGone(containerView(cri, c));
    if (!view) continue;
    view.image = imageNames.get(view.image) ?? view.image;
    const m = statsOf.get(c.id);
    if (m)
      view.metrics = {
        memoryUsage: m.memory?.working_set_bytes?.value ?? 0,
        cpuUsage: m.cpu?.usage_core_nano_seconds?.value ?? 0,
      };
    pod.containers.push(view);
  }
  return [...pods.values()];
}

/** Splits a -k id as Talos does: `ns/pod`, `ns/pod:name` or `ns/pod:name:<id prefix>`. */
export function parseContainerDisplay(id: string): {
  namespace: string;
  pod: string;
  name: string;
  containerId: string;
} {
  const slash = id.indexOf("/");
  if (slash < 0) return { namespace: "", pod: "", name: id, containerId: "" };
  const [pod = "", name = "", ...rest] = id.slice(slash + 1).split(":");
  return { namespace: id.slice(0, slash), pod, name, containerId: rest.join(":") };
}

/** One container by its -k id (Talos's inspector.Container); undefined when there is none. */
export async function criContainer(cri: CriClient, id: string): Promise<CriContainerView | undefined> {
  const { namespace, pod, name, containerId } = parseContainerDisplay(id);
  if (!pod) return undefined;
  const podLabels = { "io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": namespace };
  if (!name) {
    const sandboxes = await cri.listPodSandbox({ ...readyFilter, label_selector: podLabels });
    return sandboxes[0] ? sandboxView(cri, sandboxes[0]) : undefined;
  }
  const containers = await cri.listContainers({
    label_selector: { ...podLabels, "io.kubernetes.container.name": name },
  });
  const chosen = containerId ? containers.find((c) => c.id.includes(containerId)) : containers[0];
  return chosen ? containerView(cri, chosen) : undefined;
}
