// What happens at boot and at every lifecycle change, as data: each sequence is a
// list of phases, each phase tasks run together, conditional phases only where
// Talos has them (metal or container, installed or not). Reference §11.

import type { Phase } from "./sequencer.js";
import { ownsDisks, type MachineRuntime, type PodStopAction } from "./runtime.js";
import { closeServiceLogFiles, spillServiceLogs } from "./tasks/logs.js";
import {
  mountEphemeralPartition,
  mountOverlayFilesystems,
  setupVarDirectory,
  unmountEphemeralPartition,
  unmountOverlayFilesystems,
  unmountPodMounts,
} from "./tasks/ephemeral.js";
import { install } from "./tasks/install.js";
import { setUserEnvVars } from "./tasks/env.js";
import { setupSharedFilesystems } from "./tasks/shared-mounts.js";
import { pauseOnFailure } from "./tasks/pause.js";
import { writeUserFilesTask } from "./tasks/user-files.js";
import { reloadMeta } from "./tasks/meta.js";
import { kexecInstalled, reboot, shutdown } from "./tasks/power.js";
import { removeAllPods, startDBus, stopAllPods, stopDBus } from "./tasks/pods.js";
import { startAllServices, stopAllServices } from "./tasks/services.js";
import {
  loadConfig,
  mountStatePartition,
  removeStoredConfig,
  saveConfig,
  unmountStatePartition,
} from "./tasks/state.js";
import { wipeRequest, wipeSystemDiskAtBoot, wipeSystemPartitions, wipeUserDisks } from "./tasks/wipe.js";
import { bootUpgraded, writeUpgrade, type UpgradeOptions, type WrittenUpgrade } from "./tasks/upgrade.js";
import type { PulledInstaller } from "../oci/installer.js";

type TaskFn = (r: MachineRuntime, signal: AbortSignal) => Promise<void>;
type Step = [name: string, ...tasks: [string, TaskFn][]] | false;

function build(r: MachineRuntime, steps: Step[]): Phase[] {
  return steps
    .filter((s): s is Exclude<Step, false> => s !== false)
    .map(([name, ...tasks]) => ({
      name,
      tasks: tasks.map(([taskName, fn]) => ({ name: taskName, run: (signal: AbortSignal) => fn(r, signal) })),
    }));
}

/** Facts a sequence's shape depends on, read when it is built. */
export interface SequenceFacts {
  installed: boolean;
}

export function initializeSequence(r: MachineRuntime, f: SequenceFacts): Phase[] {
  const metal = ownsDisks(r);
  return build(r, [
    metal && wipeRequest(r.cmdline) !== undefined && ["wipeDisks", ["wipeSystemDisk", wipeSystemDiskAtBoot]],
    metal && f.installed && ["meta", ["reloadMeta", reloadMeta]],
    metal && f.installed && ["mountSystem", ["mountStatePartition", mountStatePartition]],
    ["config", ["loadConfig", loadConfig]],
  ]);
}

/** Runs once a configuration arrives on a metal node that is not installed; ends in a kexec (or reboot). */
export function installSequence(r: MachineRuntime): Phase[] {
  return build(r, [
    ["install", ["install", install]],
    ["meta", ["reloadMeta", reloadMeta]],
    ["mountState", ["mountStatePartition", mountStatePartition]],
    ["saveConfig", ["saveConfig", saveConfig]],
    ["unmountState", ["unmountStatePartition", unmountStatePartition]],
    ["stopEverything", ["stopAllServices", stopAllServices]],
    ["kexec", ["kexecPrepare", kexecInstalled]],
  ]);
}

export function bootSequence(r: MachineRuntime): Phase[] {
  const metal = ownsDisks(r);
  return build(r, [
    ["saveConfig", ["saveConfig", saveConfig]],
    ["env", ["setUserEnvVars", setUserEnvVars]],
    ["dbus", ["startDBus", startDBus]],
    metal && ["sharedFilesystems", ["setupSharedFilesystems", setupSharedFilesystems]],
    metal && ["ephemeral", ["mountEphemeralPartition", mountEphemeralPartition]],
    metal && ["var", ["setupVarDirectory", setupVarDirectory]],
    metal && ["overlay", ["mountOverlayFilesystems", mountOverlayFilesystems]],
    ["logs", ["spillServiceLogs", spillServiceLogs]],
    ["userSetup", ["writeUserFiles", pauseOnFailure("writeUserFiles", writeUserFilesTask)]],
    ["startEverything", ["startAllServices", startAllServices]],
  ]);
}

/**
 * Before anything stops, the kubelet gets PrepareForShutdown and its grace period, then it and
 * its pods stop ("remove" deletes the pods too); then the system bus goes.
 */
function podCleanup(action: PodStopAction): Step[] {
  return [
    ["cleanup", action === "stop" ? ["stopAllPods", stopAllPods] : ["removeAllPods", removeAllPods]],
    ["dbus", ["stopDBus", stopDBus]],
  ];
}

/** The phases every stopping sequence shares: services, then filesystems. */
function stopAll(metal: boolean): Step[] {
  return [
    ["stopEverything", ["stopAllServices", stopAllServices], ["closeServiceLogFiles", closeServiceLogFiles]],
    metal && [
      "umount",
      ["unmountOverlayFilesystems", unmountOverlayFilesystems],
      ["unmountPodMounts", unmountPodMounts],
    ],
    metal && [
      "unmountSystem",
      ["unmountEphemeralPartition", unmountEphemeralPartition],
      ["unmountStatePartition", unmountStatePartition],
    ],
  ];
}

export interface RebootOptions {
  /** Through the firmware (RebootRequest.Mode POWERCYCLE) instead of a kexec into the installed kernel. */
  powercycle: boolean;
}

/** Metal reboots kexec into GRUB's default entry, as Talos's KexecPrepare does; the firmware only when asked. */
function restart(metal: boolean, kexec: boolean): Step {
  return metal && kexec ? ["kexec", ["kexecPrepare", kexecInstalled]] : ["reboot", ["reboot", reboot]];
}

export function rebootSequence(r: MachineRuntime, opts: RebootOptions = { powercycle: false }): Phase[] {
  const metal = ownsDisks(r);
  return build(r, [...podCleanup("stop"), ...stopAll(metal), restart(metal, !opts.powercycle)]);
}

// ShutdownRequest.force only skips Talos's Kubernetes drain, a phase a node without a kubelet does not have.
export function shutdownSequence(r: MachineRuntime): Phase[] {
  return build(r, [...podCleanup("stop"), ...stopAll(ownsDisks(r)), ["shutdown", ["shutdown", shutdown]]]);
}

/** ResetRequest.WipeMode */
export type ResetMode = "all" | "systemDisk" | "userDisks";

export interface ResetOptions {
  /** System partitions to wipe; empty: the whole system disk. */
  labels: string[];
  reboot: boolean;
  mode: ResetMode;
  /** Whole disks to wipe (device names, e.g. /dev/vdb), checked by the API: not the system disk. */
  userDisks: string[];
  /** Pods are removed rather than only stopped (Talos's drain and etcd leave are not here yet). */
  graceful: boolean;
}

/** A container node resets as Talos's does: without the pod cleanup. */
export function resetSequence(r: MachineRuntime, opts: ResetOptions): Phase[] {
  const metal = ownsDisks(r);
  const systemDisk = opts.mode !== "userDisks";
  const userDisks = opts.mode !== "systemDisk" && opts.userDisks.length > 0;
  // A kexec needs BOOT; a reset that wipes the whole system disk reboots through the firmware.
  const kexec = systemDisk && opts.labels.length > 0;
  return build(r, [
    ...(metal ? podCleanup(opts.graceful ? "remove" : "stop") : []),
    ...stopAll(metal),
    !metal &&
      systemDisk &&
      (opts.labels.length === 0 || opts.labels.includes("STATE")) && ["reset", ["resetSystemDisk", removeStoredConfig]],
    metal &&
      systemDisk &&
      (opts.labels.length === 0
        ? ["reset", ["resetSystemDisk", (rt) => wipeSystemPartitions(rt, [])]]
        : ["resetSpec", ["resetSystemDiskSpec", (rt) => wipeSystemPartitions(rt, opts.labels)]]),
    metal && userDisks && ["resetUserDisks", ["resetUserDisks", () => wipeUserDisks(opts.userDisks)]],
    opts.reboot ? restart(metal, kexec) : ["shutdown", ["shutdown", shutdown]],
  ]);
}

/**
 * Upgrade (the installer already pulled): the new slot written (then `onWritten`), everything stopped, the
 * new system booted.
 */
export function upgradeSequence(
  r: MachineRuntime,
  pulled: PulledInstaller,
  opts: UpgradeOptions,
  onWritten?: (rt: MachineRuntime) => void,
): Phase[] {
  let written: WrittenUpgrade | undefined;
  const upgrade = async (rt: MachineRuntime) => {
    written = await writeUpgrade(rt, pulled, opts.image);
    onWritten?.(rt);
  };
  return build(r, [
    ["upgrade", ["upgrade", upgrade]],
    ...podCleanup(opts.preserve ? "stop" : "remove"),
    ...stopAll(ownsDisks(r)),
    ["reboot", ["reboot", (rt) => bootUpgraded(rt, written!, opts.rebootMode)]],
  ]);
}

/** upgrade --stage: META holds the request (0x07/0x08); the next boot performs it. */
export function stageUpgradeSequence(r: MachineRuntime): Phase[] {
  return build(r, [...podCleanup("stop"), ...stopAll(ownsDisks(r)), ["reboot", ["reboot", reboot]]]);
}
