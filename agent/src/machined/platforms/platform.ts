// A cloud platform as the node reads it, as Talos's Platform splits it: its network (the
// instance's addresses, routes, hostname and PlatformMetadata) and its user data (the
// machine configuration). Each platform module fetches through the narrow PlatformIo and
// hands the documents to a pure parser.

import type { Logger } from "../../log.js";
import type { VmwareBackdoor } from "../../sys/vmware-backdoor.js";
import type { PlatformNetworkConfig } from "../../network/platform-config.js";
import type { VolumeFiles } from "../config-source/labelled-volume.js";
import type { MetadataHttp } from "./metadata-http.js";
import type { RetryTiming } from "./retry.js";

export interface PlatformIo {
  http: MetadataHttp;
  /** The kernel's arguments (VMware reads guestinfo only with talos.config=guestinfo). */
  cmdline: Map<string, string[]>;
  /** The VMware hypervisor's backdoor, where VMware's guestinfo is read. */
  vmwareBackdoor: VmwareBackdoor;
  /** Ends with the node's run. */
  signal: AbortSignal;
  /** How a platform's own downloads are retried while the service cannot be reached. */
  retry: RetryTiming;
  /** Files of the first volume with one of the labels (a config drive); undefined without one. */
  readVolume(labels: readonly string[], files: readonly string[]): Promise<VolumeFiles | undefined>;
  /**
   * `file` from the first device under /dev whose name matches `names` that mounts as `fstype`
   * and holds it (a provisioning CD); undefined when none does.
   */
  readDeviceFile(names: RegExp, fstype: string, file: string): Promise<VolumeFiles | undefined>;
  log: Logger;
}

/**
 * What the node tells its platform about acquiring its configuration, at the moments Talos's
 * acquire controller does: maintenance mode entered ("activate"), the configuration loaded,
 * or loading it failed (`error` says why).
 */
export interface PlatformEvent {
  type:
    | "activate"
    | "failure"
    | "talos.prov.config.loaded"
    | "talos.prov.host.rebooted"
    | "talos.prov.os.installed"
    | "talos.prov.os.upgraded";
  message: string;
  error?: string;
}

/** What a platform sends its events with. */
export interface PlatformEventIo {
  http: MetadataHttp;
  /** The kernel's arguments (Equinix Metal passes its events endpoint there). */
  cmdline: Map<string, string[]>;
  signal: AbortSignal;
  /** How a POST is retried while the endpoint cannot be reached. */
  retry: RetryTiming;
  log: Logger;
}

export interface CloudPlatform {
  readonly name: string;
  /** Everything is read from a local device: the node needs no address first (Talos waits only for the devices). */
  readonly local?: boolean;
  /** The instance's network and PlatformMetadata. */
  readNetwork(io: PlatformIo): Promise<PlatformNetworkConfig>;
  /** The user data; undefined when the instance has none (Talos: ErrNoConfigSource). */
  readUserData(io: PlatformIo): Promise<Buffer | undefined>;
  /** What the platform wants done once its user data was read, or found missing (Azure's Ready report); never throws. */
  afterUserData?(io: PlatformIo): Promise<void>;
  /** Sends `event` to the platform's events endpoint (only platforms that have one); rejects when it could not. */
  sendEvent?(event: PlatformEvent, io: PlatformEventIo): Promise<void>;
}

/** User data that is empty or only whitespace is none, as Talos treats it. */
export function nonEmpty(data: Buffer | undefined): Buffer | undefined {
  return data === undefined || data.toString("utf8").trim() === "" ? undefined : data;
}
