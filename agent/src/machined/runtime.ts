import type { MachineStage } from "../resources/catalog/runtime.js";
import type { ResourceState } from "../resources/state.js";
import type { ServiceDefinition } from "../services/service.js";
import type { Supervisor } from "../services/supervisor.js";
import type { MetaStore } from "../storage/meta.js";
import type { SystemDisk } from "../storage/system-disk.js";
import type { MountedVolume } from "../storage/volumes.js";
import type { BlockSysfs } from "../sys/block.js";
import type { Mounter } from "../sys/mount.js";
import type { Paths } from "../sys/paths.js";
import type { Power } from "../sys/power.js";
import type { Logind } from "./logind/service.js";
import type { PodStopAction } from "../services/cri/stop-pods.js";
import type { Platform } from "./platform.js";
import type { PlatformEvent } from "./platforms/platform.js";

export type { PodStopAction };

/** What the sequences' tasks act on: the machine's parts and the facts one boot gathers. */
export interface MachineRuntime {
  readonly paths: Paths;
  readonly platform: Platform;
  readonly state: ResourceState;
  readonly supervisor: Supervisor;
  readonly block: BlockSysfs;
  readonly mounter: Mounter;
  readonly power: Power;
  /** Kernel arguments, every value of each. */
  readonly cmdline: Map<string, string[]>;
  /** The disk the system is installed on (found at boot, or written by install). */
  systemDisk: SystemDisk | undefined;
  /** The configuration this boot runs with: loaded from STATE, or received in maintenance mode. */
  configText: string | undefined;
  /** The META store, once the system disk's META partition is open. */
  meta: MetaStore | undefined;
  /** Mounted system volumes, by name (STATE, EPHEMERAL). */
  readonly volumes: Map<string, MountedVolume>;
  /** The stage MachineStatus reports (its controller judges readiness). */
  setStage(stage: MachineStage): void;
  /** Serves maintenance mode until a complete configuration is applied; returns its text. */
  maintenance(): Promise<string>;
  /**
   * Publishes the platform's metadata and, when `wantConfig`, returns the valid complete configuration
   * it offers (talos.config=, nocloud); undefined when there is none or it failed (reported, not thrown).
   */
  platformConfig(wantConfig: boolean): Promise<string | undefined>;
  /** Tells the platform how the node fares, where it has an events endpoint; never waits or throws. */
  platformEvent(event: PlatformEvent): void;
  /** Resolves once the events fired so far are sent (or failed), or after `limitMs`. */
  platformEventsSent(limitMs: number): Promise<void>;
  /** The services this node runs with its configuration (apid; trustd on a control plane), in start order. */
  services(): ServiceDefinition[];
  /** `volumes` changed: MountStatus resources follow. */
  mountsChanged(): void;
  /** META's keys changed: MetaKeys resources follow. */
  metaChanged(): void;
  /** The system bus and login1, which the kubelet's graceful node shutdown talks to. */
  readonly logind: Logind;
  /** Stops every CRI pod (network-namespaced ones first), or removes them; resolves at once where no CRI runs. */
  stopPods(action: PodStopAction, signal: AbortSignal): Promise<void>;
}

/** True on platforms that own a disk (anything but the container/sandbox platform). */
export function ownsDisks(r: Pick<MachineRuntime, "platform">): boolean {
  return r.platform.mode !== "container";
}
