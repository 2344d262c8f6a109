import { promises as fs } from "node:fs";
import path from "node:path";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { Paths } from "../../sys/paths.js";
import { ProcessRunner } from "../process-runner.js";
import { pollUntilReady } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

/** Where the system containerd keeps its socket, state and root. */
export interface ContainerdPaths {
  /** Its API socket (Talos: /system/run/containerd/containerd.sock). */
  socket: string;
  /** Runtime state, lost at reboot (Talos: /system/run/containerd; /run/containerd is the CRI containerd's). */
  state: string;
  /** Images, content and snapshots (Talos: /system/var/lib/containerd; /var/lib/containerd is the CRI containerd's). */
  root: string;
  /** The generated configuration file. */
  config: string;
}

export function containerdPaths(paths: Paths): ContainerdPaths {
  return {
    socket: path.join(paths.system, "run", "containerd", "containerd.sock"),
    state: path.join(paths.system, "run", "containerd"),
    root: path.join(paths.system, "var", "lib", "containerd"),
    config: path.join(paths.system, "etc", "containerd", "config.toml"),
  };
}

/**
 * containerd's configuration: our paths, no CRI plugin (this containerd runs system services and
 * extension services; Kubernetes has the `cri` service's), no debug or metrics listeners.
 */
export function containerdConfig(p: ContainerdPaths): string {
  const q = (s: string) => JSON.stringify(s);
  return [
    "version = 2",
    `root = ${q(p.root)}`,
    `state = ${q(p.state)}`,
    'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
    "",
    "[grpc]",
    `  address = ${q(p.socket)}`,
    "",
    "[ttrpc]",
    `  address = ${q(`${p.socket}.ttrpc`)}`,
    "",
    "[debug]",
    '  address = ""',
    "",
    "[metrics]",
    '  address = ""',
    "",
  ].join("\n");
}

export interface ContainerdServiceOptions {
  paths: ContainerdPaths;
  /** The containerd program (Debian's /usr/bin/containerd). */
  command: string;
  /** A client of this containerd (its health check calls Version). */
  client: () => ContainerdClient;
}

/**
 * containerd, as Talos runs its system containerd: no dependencies, restarted whenever it exits,
 * ready and healthy when its API answers Version.
 */
export function containerdService(opts: ContainerdServiceOptions): ServiceDefinition {
  const health = async () => {
    await opts.client().version();
  };
  const p = opts.paths;
  return {
    id: "containerd",
    restart: "always",
    // Talos's system containerd: /system/runtime, and the OOM killer's last choice.
    cgroup: "/system/runtime",
    oomScoreAdj: -999,
    pre: async () => {
      for (const dir of [path.dirname(p.socket), p.state, p.root, path.dirname(p.config)])
        await fs.mkdir(dir, { recursive: true, mode: 0o711 });
      await fs.writeFile(p.config, containerdConfig(p), { mode: 0o644 });
    },
    runner: new ProcessRunner({
      id: "containerd",
      command: opts.command,
      args: ["--config", p.config],
      // containerd finds its shim (containerd-shim-runc-v2) and runc on PATH, which init may not set.
      env: { ...process.env, PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
      ready: (signal) => pollUntilReady(health, signal, 200),
      health,
    }),
  };
}
