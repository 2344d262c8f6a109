// Loading kernel modules with their dependencies and parameters (kmod's modprobe on a node).

import { promises as fs } from "node:fs";
import path from "node:path";
import { runTool } from "./exec.js";

export interface KernelModules {
  /** Loads `name` and what it depends on; a module already loaded (or built in) is left as it is. */
  load(name: string, parameters: readonly string[]): Promise<void>;
}

/** The running kernel's modules, through modprobe (which resolves modules.dep and aliases). */
export function kernelModulesByModprobe(modprobe = "/usr/sbin/modprobe"): KernelModules {
  return {
    load: async (name, parameters) =>
      void (await runTool(modprobe, ["--", name, ...parameters], { timeoutMs: 60_000 })),
  };
}

/**
 * For the sandbox, which must not load modules into the host's kernel (nor can count on the
 * host having any): each load is recorded as `dir/<name>`, its parameters one per line.
 */
export function kernelModulesRecorded(dir: string): KernelModules {
  return {
    load: async (name, parameters) => {
      await fs.mkdir(dir, { recursive: true });
      await fs.writeFile(path.join(dir, name), parameters.map((p) => p + "\n").join(""));
    },
  };
}
