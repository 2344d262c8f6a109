// cgroups v2 as Talos lays them out: init (machined), system (one group per system
// service; system/runtime, system/udevd), podruntime (runtime, kubelet) and kubepods,
// with Talos's memory protection (memory.min, memory.low twice that).

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SystemError } from "../errors.js";

const MiB = 1024 * 1024;

/** Talos's groups and the memory each is guaranteed (min; low is twice it), parents first. */
export const talosCgroups: readonly { name: string; memoryMin?: number; memoryLow?: number }[] = [
  { name: "/init", memoryMin: 96 * MiB },
  { name: "/system", memoryMin: 96 * MiB },
  { name: "/system/runtime" },
  { name: "/system/udevd" },
  { name: "/system/dashboard", memoryMin: 85 * MiB, memoryLow: 100 * MiB },
  { name: "/podruntime" },
  { name: "/podruntime/runtime", memoryMin: 128 * MiB },
  { name: "/podruntime/kubelet", memoryMin: 64 * MiB },
  { name: "/kubepods" },
];

/** The controllers handed down to Talos's groups, where the kernel has them. */
const delegated = ["cpu", "io", "memory", "pids"];

export interface Cgroups {
  /** Creates Talos's groups and moves process `initPid` (machined) into /init. */
  setup(initPid: number): void;
  /** Moves a started process into `group` (created when missing) and sets its oom_score_adj. */
  place(pid: number, group: string, oomScoreAdj?: number): void;
}

/**
 * The unified hierarchy mounted at `root` (/sys/fs/cgroup on a node). Writes are synchronous on
 * purpose: place() runs right after a spawn returns, before the new program has done much.
 */
export function cgroupfs(root = "/sys/fs/cgroup", proc = "/proc"): Cgroups {
  const write = (file: string, value: string) => {
    try {
      writeFileSync(file, value);
    } catch (err) {
      throw new SystemError(`writing ${value.trim()} to ${file} failed`, { file }, { cause: err });
    }
  };
  const dir = (group: string) => path.join(root, group);
  return {
    setup(initPid) {
      // Children may only set memory.* once the parent delegates the memory controller.
      for (const parent of ["", "/system", "/podruntime"]) {
        mkdirSync(dir(parent), { recursive: true });
        const available = readFileSync(path.join(dir(parent), "cgroup.controllers"), "utf8").split(/\s+/);
        const wanted = delegated.filter((c) => available.includes(c));
        if (wanted.length > 0)
          write(path.join(dir(parent), "cgroup.subtree_control"), wanted.map((c) => `+${c}`).join(" "));
      }
      for (const g of talosCgroups) {
        mkdirSync(dir(g.name), { recursive: true });
        if (g.memoryMin !== undefined) {
          write(path.join(dir(g.name), "memory.min"), String(g.memoryMin));
          write(path.join(dir(g.name), "memory.low"), String(g.memoryLow ?? g.memoryMin * 2));
        }
      }
      write(path.join(dir("/init"), "cgroup.procs"), String(initPid));
    },
    place(pid, group, oomScoreAdj) {
      mkdirSync(dir(group), { recursive: true });
      write(path.join(dir(group), "cgroup.procs"), String(pid));
      if (oomScoreAdj !== undefined) write(path.join(proc, String(pid), "oom_score_adj"), String(oomScoreAdj));
    },
  };
}

/** No groups of our own (the sandbox: the host's cgroups are not ours to rearrange). */
export const noCgroups: Cgroups = {
  setup: () => undefined,
  place: () => undefined,
};
