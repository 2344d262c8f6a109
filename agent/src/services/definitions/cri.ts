import { promises as fs } from "node:fs";
import path from "node:path";
import type { ResourceState } from "../../resources/state.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import { allOf, networkReady, pathExists } from "../conditions.js";
import { criContainerdConfig, type CriPaths } from "../cri/config.js";
import { ProcessRunner } from "../process-runner.js";
import { pollUntilReady } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

export interface CriServiceOptions {
  paths: CriPaths;
  /** The containerd program with the CRI plugin (Debian's /usr/bin/containerd). */
  command: string;
  /** A client of this containerd (its health check calls Version). */
  client: () => ContainerdClient;
  /** Where the network status is (Talos's cri waits for addresses, hostname and /etc files). */
  state: ResourceState;
}

/** Talos's CgroupPodRuntime. */
export const podRuntimeCgroup = "/podruntime/runtime";

/** The operator's conf.d/*.toml parts, imported by the main file (cri.toml among them is the generated one). */
async function configParts(p: CriPaths): Promise<string[]> {
  const names = await fs.readdir(p.confd).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(".toml")).map((n) => path.join(p.confd, n));
}

/**
 * The CRI containerd, as Talos runs its `cri` service: a second containerd with the CRI plugin for
 * Kubernetes, after the system containerd, once the network has addresses, a hostname and its /etc
 * files (Talos's condition) and its registry part is written; restarted whenever
 * it exits, in /podruntime/runtime with OOM score -500; healthy when its API answers Version.
 */
export function criService(opts: CriServiceOptions): ServiceDefinition {
  const health = async () => {
    await opts.client().version();
  };
  const p = opts.paths;
  return {
    id: "cri",
    dependsOn: ["containerd"],
    conditions: [allOf(networkReady(opts.state, "address", "hostname", "etc-files"), pathExists(p.criPart, 100))],
    restart: "always",
    cgroup: podRuntimeCgroup,
    oomScoreAdj: -500,
    pre: async () => {
      for (const dir of [path.dirname(p.socket), p.state, p.root])
        await fs.mkdir(dir, { recursive: true, mode: 0o711 });
      await fs.writeFile(p.config, criContainerdConfig(p, await configParts(p)), { mode: 0o644 });
    },
    runner: new ProcessRunner({
      id: "cri",
      command: opts.command,
      args: ["--config", p.config],
      // containerd finds its shim and runc on PATH, which init may not set.
      env: { ...process.env, PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
      ready: (signal) => pollUntilReady(health, signal, 200),
      health,
    }),
  };
}
