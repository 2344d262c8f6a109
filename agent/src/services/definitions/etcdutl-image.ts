// etcdutl for a restore, run from etcd's image (EtcdSpec.image carries it at /usr/local/bin/etcdutl,
// as upstream's does; a node's root filesystem has none): a one-shot task in CRI containerd's
// namespace `system` that sees only the data directory and the uploaded snapshot. It runs as root
// with CAP_DAC_OVERRIDE alone: the snapshot is root's (0700) and the data directory etcd's (0700);
// the etcd service hands what it restored to etcd's user afterwards.
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { EtcdPaths } from "../../sys/etcd/paths.js";
import type { EtcdutlFactory } from "../../sys/etcd/restore.js";
import type { ImageProcessSpec } from "../containerd/image-runner.js";
import { runImageTask } from "../containerd/one-shot.js";
import type { Registries } from "../images/registry.js";

/** Where etcd's image holds etcdutl. */
export const etcdutlImagePath = "/usr/local/bin/etcdutl";

/** The task's container id (one run at a time: the status, then the restore). */
export const etcdutlTaskId = "etcdutl";

export interface EtcdutlImageOptions {
  /** A client of the CRI containerd in namespace `system`. */
  client: () => ContainerdClient;
  registries: () => Registries | undefined;
  paths: Pick<EtcdPaths, "dataDir" | "recoverySnapshot">;
  /** Where the task's output is captured while it runs. */
  outputDir: string;
  /** The capabilities machined holds. */
  heldCapabilities: ReadonlySet<string>;
  /** Its cgroup (e.g. etcd's, /system/etcd); unset: runc's default. */
  cgroupsPath?: string;
}

/** The container process of one etcdutl run: the data directory read-write, the snapshot read-only, at their host paths. */
export function etcdutlImageProcess(
  args: string[],
  o: Pick<EtcdutlImageOptions, "paths" | "heldCapabilities" | "cgroupsPath">,
): ImageProcessSpec {
  return {
    args: [etcdutlImagePath, ...args],
    env: [],
    user: { uid: 0, gid: 0 },
    capabilities: ["CAP_DAC_OVERRIDE"],
    readonlyRootfs: true,
    mounts: [
      { destination: o.paths.dataDir, type: "bind", source: o.paths.dataDir, options: ["rbind", "rw"] },
      {
        destination: o.paths.recoverySnapshot,
        type: "bind",
        source: o.paths.recoverySnapshot,
        options: ["rbind", "ro"],
      },
    ],
    hostFiles: {},
    heldCapabilities: o.heldCapabilities,
    ...(o.cgroupsPath ? { cgroupsPath: o.cgroupsPath } : {}),
  };
}

/** The etcd service's etcdutl on a node: each run a task from etcd's image. */
export function etcdutlImage(o: EtcdutlImageOptions): EtcdutlFactory {
  return (image) => async (args, signal) => {
    const result = await runImageTask({
      id: etcdutlTaskId,
      image,
      client: o.client,
      registries: o.registries,
      process: async () => etcdutlImageProcess(args, o),
      outputDir: o.outputDir,
      ...(signal ? { signal } : {}),
    });
    return { exitCode: result.exitCode, output: result.output.toString("utf8") };
  };
}
