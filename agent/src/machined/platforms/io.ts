// The PlatformIo of a node: its HTTP to the metadata service, and volumes (by label, or by device
// name as a provisioning CD is found) read once udev has settled the devices.

import type { Logger } from "../../log.js";
import type { ResourceState } from "../../resources/state.js";
import type { Mounter } from "../../sys/mount.js";
import { nodeVmwareBackdoor, type VmwareBackdoor } from "../../sys/vmware-backdoor.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { describeError } from "../../errors.js";
import { readLabelledVolume, type VolumeFiles } from "../config-source/labelled-volume.js";
import { devicesReady } from "../devices-ready.js";
import { fetchMetadataHttp, type MetadataHttp } from "./metadata-http.js";
import type { PlatformIo } from "./platform.js";
import { downloadRetry, type RetryTiming } from "./retry.js";

export interface NodePlatformIoDeps {
  state: ResourceState;
  mounter: Mounter;
  mountDir: string;
  signal: AbortSignal;
  cmdline: Map<string, string[]>;
  log: Logger;
  /** Another HTTP (tests); node's fetch otherwise. */
  http?: MetadataHttp;
  /** Another VMware backdoor (tests); the CPU's otherwise. */
  vmwareBackdoor?: VmwareBackdoor;
  /** Where devices are listed (/dev). */
  devDir?: string;
  /** How the platform's own downloads are retried (Talos's download: 3 min). */
  retry?: RetryTiming;
}

/** Talos's scan of /dev: each matching device mounted read-only in turn; one that does not mount, or lacks the file, is passed over. */
async function readDeviceFile(
  d: NodePlatformIoDeps,
  names: RegExp,
  fstype: string,
  file: string,
): Promise<VolumeFiles | undefined> {
  const dev = d.devDir ?? "/dev";
  for (const name of (await fs.readdir(dev)).filter((n) => names.test(n)).sort()) {
    const device = path.join(dev, name);
    await fs.mkdir(d.mountDir, { recursive: true });
    try {
      await d.mounter.mount(device, d.mountDir, fstype, ["ro"]);
    } catch (err) {
      d.log.info(`unable to mount ${device}, possibly not ${fstype}`, { error: describeError(err) });
      continue;
    }
    try {
      const data = await fs.readFile(path.join(d.mountDir, file)).catch(() => undefined);
      if (data) return { device, files: new Map([[file, data]]) };
    } finally {
      await d.mounter.unmount(d.mountDir);
    }
  }
  return undefined;
}

/** Runs the functions it is given one after another, each once the one before has settled. */
function oneAtATime(): <T>(fn: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = last.then(fn, fn);
    last = run.catch(() => undefined);
    return run;
  };
}

export function nodePlatformIo(d: NodePlatformIoDeps): PlatformIo {
  // The network and the user data are read side by side, and both may mount a volume on the one mount point.
  const mountPoint = oneAtATime();
  return {
    http: d.http ?? fetchMetadataHttp(d.signal),
    cmdline: d.cmdline,
    vmwareBackdoor: d.vmwareBackdoor ?? nodeVmwareBackdoor(),
    signal: d.signal,
    retry: d.retry ?? downloadRetry,
    readVolume: async (labels, files) => {
      await devicesReady(d.state, d.signal);
      return mountPoint(() => readLabelledVolume(labels, files, d.mounter, d.mountDir));
    },
    readDeviceFile: async (names, fstype, file) => {
      await devicesReady(d.state, d.signal);
      return mountPoint(() => readDeviceFile(d, names, fstype, file));
    },
    log: d.log,
  };
}
