// A service run as a container from an image, as Talos runs etcd and the kubelet (namespace `system`
// of the CRI containerd): the image pulled through the node's registry mirrors unless present, a
// fresh overlayfs snapshot of it as the root, the image's config under the service's own process
// settings (oci.WithImageConfig, then the args and environment given). The task's life is the
// ContainerRunner's: logs, SIGTERM then SIGKILL, leftovers of an earlier run removed first.
import { NotFoundError } from "../../errors.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { pullImage } from "../images/pull.js";
import type { Registries } from "../images/registry.js";
import { imageRunConfig, nodePlatform, type ImageRunConfig } from "../images/store.js";
import type { RunContext } from "../service.js";
import { ContainerRunner, type ContainerRoot } from "./runner.js";
import type { ContainerProcessSpec } from "./oci-spec.js";

const SNAPSHOTTER = "overlayfs";

/** The process settings of an image's container: its root is the image's; cgroup and OOM score default to the service's. */
export type ImageProcessSpec = Omit<ContainerProcessSpec, "rootfs" | "cgroupsPath"> & { cgroupsPath?: string };

export interface ImageRunnerSpec {
  id: string;
  /** e.g. `gcr.io/etcd-development/etcd:v3.5.13` */
  image: string;
  /** A client of the containerd it runs on, in its namespace (Talos: `system` on the CRI containerd). */
  client: () => ContainerdClient;
  /** `.machine.registries` when the image is pulled. */
  registries: () => Registries | undefined;
  process: () => Promise<ImageProcessSpec>;
  /** The file the task's stdout and stderr are appended to. */
  logFile: string;
  output?: (chunk: Buffer) => void;
  stopTimeoutMs?: number;
}

/** containerd's replaceOrAppendEnvValues: a later KEY=value replaces an earlier one of that key. */
export function mergeEnv(base: string[], over: string[]): string[] {
  const key = (e: string) => (e.includes("=") ? e.slice(0, e.indexOf("=")) : e);
  const out = [...base];
  for (const e of over) {
    const i = out.findIndex((b) => key(b) === key(e));
    if (i >= 0) out[i] = e;
    else out.push(e);
  }
  return out;
}

/** A numeric `uid[:gid]` from an image config's User (a name would need the image's /etc/passwd; none of ours use one). */
function numericUser(user: string): { uid: number; gid: number } | undefined {
  const m = /^(\d+)(?::(\d+))?$/.exec(user);
  return m ? { uid: Number(m[1]), gid: Number(m[2] ?? 0) } : undefined;
}

/** The container spec: the image's config first, the service's settings over it. */
export function imageProcess(
  config: ImageRunConfig,
  p: ImageProcessSpec,
  ctx: RunContext | undefined,
): ContainerProcessSpec {
  const imageUser = numericUser(config.user);
  const user = p.user ?? imageUser;
  const oomScoreAdj = p.oomScoreAdj ?? ctx?.oomScoreAdj;
  return {
    ...p,
    rootfs: "rootfs",
    args: p.args.length > 0 ? p.args : [...config.entrypoint, ...config.cmd],
    env: mergeEnv(config.env, p.env),
    cwd: p.cwd ?? config.workingDir,
    cgroupsPath: p.cgroupsPath ?? ctx?.cgroup ?? "",
    ...(user ? { user } : {}),
    ...(oomScoreAdj !== undefined ? { oomScoreAdj } : {}),
  };
}

/** The image, pulled when missing, and a snapshot of it named after the container. */
class ImageRoot implements ContainerRoot {
  constructor(private readonly spec: ImageRunnerSpec) {}

  /** Pulls the image unless present; its name and run config. */
  async resolve(client: ContainerdClient): Promise<{ name: string; config: ImageRunConfig }> {
    const name = await pullImage(client, this.spec.image, this.spec.registries());
    const image = await client.getImage(name);
    return { name, config: await imageRunConfig(client, image.target, nodePlatform()) };
  }

  async prepare(client: ContainerdClient, id: string) {
    const { name, config } = await this.resolve(client);
    const mounts = await client.prepareSnapshot(SNAPSHOTTER, id, config.topChainId);
    return { image: name, snapshotter: SNAPSHOTTER, snapshotKey: id, mounts };
  }

  async remove(client: ContainerdClient, id: string): Promise<void> {
    await client.removeSnapshot(SNAPSHOTTER, id).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
    });
  }
}

/** A ServiceRunner for a service whose program comes from an image (Talos's containerd runner with WithContainerImage). */
export class ImageRunner extends ContainerRunner {
  constructor(spec: ImageRunnerSpec) {
    const root = new ImageRoot(spec);
    super({
      id: spec.id,
      client: spec.client,
      root,
      process: async (ctx) => imageProcess((await root.resolve(spec.client())).config, await spec.process(), ctx),
      logFile: spec.logFile,
      ...(spec.output ? { output: spec.output } : {}),
      ...(spec.stopTimeoutMs !== undefined ? { stopTimeoutMs: spec.stopTimeoutMs } : {}),
    });
  }
}
