// Stopping (or removing) every pod of the CRI as Talos does when a node stops: the pods with their
// own network namespace first, so the CNI can still tear down their networking, then the rest
// (host-network pods such as the static control plane). Each pod's running containers are stopped
// with the kubelet's shutdown grace period, then the sandbox; gone ones are no error.
import { logger } from "../../log.js";
import type { CriClient } from "../../sys/cri/client.js";
import { unlessGone } from "./unless-gone.js";

const log = logger("cri");

/** Talos's CRI StopAction: "stop" leaves the pods' sandboxes to the next boot, "remove" deletes them. */
export type PodStopAction = "stop" | "remove";

/** What stopping pods needs of the CRI runtime service. */
export type PodRuntime = Pick<
  CriClient,
  | "listPodSandbox"
  | "podSandboxStatus"
  | "listContainers"
  | "stopContainer"
  | "removeContainer"
  | "stopPodSandbox"
  | "removePodSandbox"
>;

/** Talos's KubeletShutdownGracePeriod, in seconds. */
export const KUBELET_SHUTDOWN_GRACE_SECONDS = 30;

const NAMESPACE_MODE_POD = 0;
const NAMESPACE_MODE_CONTAINER = 1;
const SANDBOX_READY = 0;
const CONTAINER_RUNNING = 1;
const CONTAINER_UNKNOWN = 3;

async function stopPod(
  cri: PodRuntime,
  action: PodStopAction,
  pod: Awaited<ReturnType<PodRuntime["listPodSandbox"]>>[number],
): Promise<void> {
  const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const containers = (await unlessGone(cri.listContainers({ pod_sandbox_id: pod.id }))) ?? [];
  await Promise.all(
    containers.map(async (c) => {
      if (c.state === CONTAINER_RUNNING || c.state === CONTAINER_UNKNOWN)
        await unlessGone(cri.stopContainer(c.id, KUBELET_SHUTDOWN_GRACE_SECONDS));
      if (action === "remove") await unlessGone(cri.removeContainer(c.id));
    }),
  );
  const ignore = (what: string) => (err: unknown) =>
    log.warn(`${what} pod failed, ignored`, { pod: name, error: String(err) });
  if (pod.state === SANDBOX_READY) await unlessGone(cri.stopPodSandbox(pod.id)).catch(ignore("stopping"));
  if (action === "remove") await unlessGone(cri.removePodSandbox(pod.id)).catch(ignore("removing"));
  log.info(`${action === "remove" ? "removed" : "stopped"} pod`, { pod: name });
}

/** Stops (or removes) the pods whose network mode is among `modes` (every pod when none are given). */
async function stopPodsIn(cri: PodRuntime, action: PodStopAction, modes: number[]): Promise<void> {
  const pods = await cri.listPodSandbox();
  await Promise.all(
    pods.map(async (pod) => {
      const status = await unlessGone(cri.podSandboxStatus(pod.id));
      if (!status) return;
      const mode = status.status?.linux?.namespaces?.options?.network ?? NAMESPACE_MODE_POD;
      if (modes.length > 0 && !modes.includes(mode)) return;
      await stopPod(cri, action, pod);
    }),
  );
}

export async function stopAllPods(cri: PodRuntime, action: PodStopAction): Promise<void> {
  await stopPodsIn(cri, action, [NAMESPACE_MODE_POD, NAMESPACE_MODE_CONTAINER]);
  await stopPodsIn(cri, action, []);
}
