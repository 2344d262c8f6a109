// etcd run from its image, as Talos runs it: a task in CRI containerd's namespace `system` whose
// root is the image (pulled through the registry mirrors), etcd's args, env, mounts and user over
// the image's config, no capabilities, the host's network, hosts file and resolv.conf.
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { ImageRunner, type ImageProcessSpec } from "../containerd/image-runner.js";
import type { Registries } from "../images/registry.js";
import type { RunContext, ServiceRunner } from "../service.js";
import type { EtcdProcess, EtcdRunnerFactory } from "./etcd.js";

export interface EtcdImageOptions {
  /** A client of the CRI containerd in namespace `system`. */
  client: () => ContainerdClient;
  registries: () => Registries | undefined;
  /** Where the task's output is appended. */
  logFile: string;
  /** The host's /etc/hosts and /etc/resolv.conf, bind-mounted read-only (Talos's WithHostHostsFile/WithHostResolvconf). */
  hostFiles: { hosts?: string; resolvConf?: string };
  /** The capabilities machined holds. */
  heldCapabilities: ReadonlySet<string>;
}

/** The container process of etcd's process (Talos: WithDroppedCapabilities(cap.Known()), its mounts, user 60). */
export function etcdImageProcess(
  proc: EtcdProcess,
  o: Pick<EtcdImageOptions, "hostFiles" | "heldCapabilities">,
): ImageProcessSpec {
  return {
    args: proc.args,
    env: proc.env,
    user: proc.user,
    capabilities: [],
    readonlyRootfs: false,
    mounts: proc.mounts.map((m) => ({
      destination: m.destination,
      type: m.type,
      source: m.source,
      options: m.options,
    })),
    hostFiles: o.hostFiles,
    heldCapabilities: o.heldCapabilities,
    oomScoreAdj: proc.oomScoreAdj,
  };
}

/** The runner the etcd service takes to run etcd from its image (instead of a host process). */
export function etcdImageRunner(o: EtcdImageOptions): EtcdRunnerFactory {
  return (proc, health): ServiceRunner => {
    const runner = new ImageRunner({
      id: proc.id,
      image: proc.image,
      client: o.client,
      registries: o.registries,
      process: async () => etcdImageProcess(proc, o),
      logFile: o.logFile,
    });
    return {
      start: (onExit: (err: Error | undefined) => void, ctx?: RunContext) => runner.start(onExit, ctx),
      stop: () => runner.stop(),
      describe: () => runner.describe(),
      health,
    };
  };
}
