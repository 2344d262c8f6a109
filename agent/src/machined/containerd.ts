import path from "node:path";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import type { ResourceState } from "../resources/state.js";
import { SYSTEM_NAMESPACE } from "../services/containerd/runner.js";
import { containerdPaths, containerdService, type ContainerdPaths } from "../services/definitions/containerd.js";
import { extensionService, type ExtensionServicePaths } from "../services/definitions/extension.js";
import { loadExtensionServices, type ExtensionServiceSpec } from "../services/extensions/spec.js";
import type { ServiceDefinition } from "../services/service.js";
import { ContainerdClient } from "../sys/containerd/client.js";
import type { Mounter } from "../sys/mount.js";
import type { Paths } from "../sys/paths.js";

const log = logger("machined");

export interface SystemContainerdOptions {
  /** The containerd program (a node: /usr/bin/containerd). */
  command: string;
  /** The cgroup extension services' groups go under (Talos: /system/extensions). */
  cgroupParent: string;
  /** The OOM score adjustment of extension services (Talos: -600); unset in the sandbox, which may not lower it. */
  oomScoreAdj?: number;
  /** Overlays each extension's rootfs (a node: it is on the read-only root); absent in the sandbox. */
  mounter?: Mounter;
  /** Talos's environment for services (talos.environment= and .machine.env), given to every extension service. */
  environment?: () => string[];
}

/** The system containerd and the extension services it runs, with one client connection shared by machined. */
export interface SystemContainerd {
  readonly paths: ContainerdPaths;
  readonly extensionPaths: ExtensionServicePaths;
  /** A client in `namespace` (default `system`). */
  client(namespace?: string): ContainerdClient;
  /** containerd, then one `ext-<name>` per valid service file, in start order. */
  services(): ServiceDefinition[];
  close(): void;
}

export function extensionServicePaths(paths: Paths): ExtensionServicePaths {
  return {
    configDir: path.join(paths.root, "usr", "local", "etc", "containers"),
    rootfsDir: path.join(paths.root, "usr", "local", "lib", "containers"),
    userConfigDir: path.join(paths.system, "overlays", "extensions"),
    // Not /var/log itself: the supervisor keeps each service's log there as <id>.log.
    logDir: path.join(paths.var, "log", "containers"),
  };
}

/** Reads the extension service files once (they come with the image and do not change while it runs). */
export async function systemContainerd(
  paths: Paths,
  state: ResourceState,
  opts: SystemContainerdOptions,
): Promise<SystemContainerd> {
  const cp = containerdPaths(paths);
  const ext = extensionServicePaths(paths);
  const specs: ExtensionServiceSpec[] = await loadExtensionServices(ext.configDir, (file, err) =>
    log.error("invalid extension service file: skipped", { file, error: describeError(err) }),
  );
  const root = new ContainerdClient(cp.socket, SYSTEM_NAMESPACE);
  const client = (namespace = SYSTEM_NAMESPACE) =>
    namespace === SYSTEM_NAMESPACE ? root : root.inNamespace(namespace);
  const hostFiles = { hosts: path.join(paths.etc, "hosts"), resolvConf: path.join(paths.etc, "resolv.conf") };
  return {
    paths: cp,
    extensionPaths: ext,
    client,
    services: () => [
      containerdService({ paths: cp, command: opts.command, client }),
      ...specs.map((spec) =>
        extensionService({
          spec,
          paths: ext,
          state,
          client,
          cgroupParent: opts.cgroupParent,
          oomScoreAdj: opts.oomScoreAdj,
          hostFiles,
          ...(opts.environment ? { environment: opts.environment } : {}),
          ...(opts.mounter
            ? { rootfsOverlay: { mounter: opts.mounter, upperDir: path.join(paths.system, "overlays", "containers") } }
            : {}),
        }),
      ),
    ],
    close: () => root.close(),
  };
}
