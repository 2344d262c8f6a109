import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../../config/bundle.js";
import type { ExtensionServiceConfig } from "../../config/types/documents.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import type { ResourceState } from "../../resources/state.js";
import type { Mounter } from "../../sys/mount.js";
import { boundingCapabilities } from "../../sys/capabilities.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { networkReady, pathExists, resourceExists, timeSynced, type NetworkReadiness } from "../conditions.js";
import type { OciMount } from "../containerd/oci-spec.js";
import { ContainerRunner } from "../containerd/runner.js";
import { parseEnvironmentFile, type ExtensionServiceSpec, type NetworkCheck } from "../extensions/spec.js";
import { mergeEnvironment } from "../../config/environment.js";
import type { Condition, ServiceDefinition } from "../service.js";

/** Talos's locations for extension services. */
export interface ExtensionServicePaths {
  /** The service files: /usr/local/etc/containers. */
  configDir: string;
  /** Each service's root filesystem: /usr/local/lib/containers/<name>. */
  rootfsDir: string;
  /** Files from ExtensionServiceConfig documents: /system/overlays/extensions/<name>/. */
  userConfigDir: string;
  /** Where each service's output is kept: <logDir>/ext-<name>.log. */
  logDir: string;
}

export interface ExtensionServiceOptions {
  spec: ExtensionServiceSpec;
  paths: ExtensionServicePaths;
  state: ResourceState;
  /** A client of the system containerd, namespace `system`. */
  client: () => ContainerdClient;
  /** The cgroup the service's group goes under (Talos: /system/extensions). */
  cgroupParent: string;
  /** Talos's -600 for extension services; unset where it may not be lowered (the sandbox). */
  oomScoreAdj?: number;
  /** The host's /etc/hosts and /etc/resolv.conf, bound into the container when they exist. */
  hostFiles: { hosts: string; resolvConf: string };
  output?: (chunk: Buffer) => void;
  /**
   * On a node the rootfs is on the read-only root: it is overlaid for each run (upper layer under
   * `upperDir`, on tmpfs) so runc can create its mount points there, as Talos does.
   */
  rootfsOverlay?: { mounter: Mounter; upperDir: string };
  /** Talos's environment for services ("KEY=VALUE": talos.environment= and .machine.env), under the service's own. */
  environment?: () => string[];
}

const networkParts: Record<NetworkCheck, NetworkReadiness> = {
  addresses: "address",
  connectivity: "connectivity",
  hostname: "hostname",
  etcfiles: "etc-files",
};

function serviceConfig(state: ResourceState, name: string): ExtensionServiceConfig | undefined {
  return state
    .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
    ?.spec.byKind<ExtensionServiceConfig>("ExtensionServiceConfig", name)[0];
}

/** Where a config file of the service lives on the host: its mount path with `/` turned into `-`, as Talos names it. */
export function userConfigFile(paths: ExtensionServicePaths, name: string, mountPath: string): string {
  return path.join(paths.userConfigDir, name, mountPath.replace(/^\//, "").replaceAll("/", "-"));
}

/**
 * An extension service as Talos runs one: `ext-<name>`, a containerd task in namespace `system`
 * whose root is /usr/local/lib/containers/<name>, after containerd and the services, paths, network
 * and time it depends on; restarted as its `restart` says.
 */
export function extensionService(opts: ExtensionServiceOptions): ServiceDefinition {
  const { spec, paths, state } = opts;
  const id = `ext-${spec.name}`;
  const conditions: Condition[] = [];
  if (spec.container.environmentFile) conditions.push(pathExists(spec.container.environmentFile));
  for (const dep of spec.depends) {
    if (dep.path) conditions.push(pathExists(dep.path));
    else if (dep.network) conditions.push(networkReady(state, ...dep.network.map((n) => networkParts[n])));
    else if (dep.time) conditions.push(timeSynced(state));
    else if (dep.configuration) {
      conditions.push(
        resourceExists<ConfigBundle>(
          state,
          CONFIG_NAMESPACE,
          MachineConfigType,
          MachineConfigIds.active,
          (b) => b.byKind("ExtensionServiceConfig", spec.name).length > 0,
          `extension service config for ${spec.name}`,
        ),
      );
    }
  }
  const process = async () => {
    const env: string[] = [];
    if (spec.container.environmentFile)
      env.push(...parseEnvironmentFile(await fs.readFile(spec.container.environmentFile, "utf8")));
    env.push(...spec.container.environment);
    const mounts: OciMount[] = [...spec.container.mounts];
    for (const m of spec.container.mounts) await fs.mkdir(m.source, { recursive: true, mode: 0o700 });
    const cfg = serviceConfig(state, spec.name);
    for (const f of cfg?.configFiles ?? []) {
      const host = userConfigFile(paths, spec.name, f.mountPath);
      await fs.mkdir(path.dirname(host), { recursive: true, mode: 0o700 });
      await fs.writeFile(host, f.content, { mode: 0o600 });
      mounts.push({ destination: f.mountPath, type: "bind", source: host, options: ["ro", "bind"] });
    }
    env.push(...(cfg?.environment ?? []));
    const merged = mergeEnvironment(opts.environment?.() ?? [], env);
    const sec = spec.container.security;
    return {
      args: [spec.container.entrypoint, ...spec.container.args],
      env: merged,
      rootfs,
      readonlyRootfs: !sec.writeableRootfs,
      mounts,
      cgroupsPath: path.posix.join(opts.cgroupParent, spec.name),
      oomScoreAdj: opts.oomScoreAdj,
      hostFiles: {
        ...((await exists(opts.hostFiles.hosts)) ? { hosts: opts.hostFiles.hosts } : {}),
        ...((await exists(opts.hostFiles.resolvConf)) ? { resolvConf: opts.hostFiles.resolvConf } : {}),
      },
      writeableSysfs: sec.writeableSysfs,
      maskedPaths: sec.maskedPaths,
      readonlyPaths: sec.readonlyPaths,
      rootfsPropagation: sec.rootfsPropagation,
      heldCapabilities: boundingCapabilities(),
    };
  };
  const rootfs = path.join(paths.rootfsDir, spec.name);
  const overlay = opts.rootfsOverlay;
  const upper = overlay && path.join(overlay.upperDir, spec.name);
  return {
    id,
    ...(overlay && upper
      ? {
          pre: async () => {
            for (const d of ["upper", "work"]) await fs.mkdir(path.join(upper, d), { recursive: true, mode: 0o700 });
            await overlay.mounter.mount("overlay", rootfs, "overlay", [
              `lowerdir=${rootfs}`,
              `upperdir=${path.join(upper, "upper")}`,
              `workdir=${path.join(upper, "work")}`,
            ]);
          },
          post: async () => {
            await overlay.mounter.unmount(rootfs);
            await fs.rm(upper, { recursive: true, force: true });
          },
        }
      : {}),
    dependsOn: ["containerd", ...spec.depends.flatMap((d) => (d.service ? [d.service] : []))],
    conditions,
    restart: spec.restart,
    // Extension services may be started, stopped and restarted through the API (Talos's Extension service).
    api: { start: true, stop: true, restart: true },
    runner: new ContainerRunner({
      id,
      client: opts.client,
      process,
      logFile: path.join(paths.logDir, `${id}.log`),
      ...(opts.output ? { output: opts.output } : {}),
    }),
  };
}

function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
