// The PlatformIo of a node: its HTTP to the metadata service and labelled volumes read once
// udev has settled the devices.

import type { Logger } from "../../log.js";
import type { ResourceState } from "../../resources/state.js";
import type { Mounter } from "../../sys/mount.js";
import { readLabelledVolume } from "../config-source/labelled-volume.js";
import { devicesReady } from "../devices-ready.js";
import { fetchMetadataHttp, type MetadataHttp } from "./metadata-http.js";
import type { PlatformIo } from "./platform.js";

export interface NodePlatformIoDeps {
  state: ResourceState;
  mounter: Mounter;
  mountDir: string;
  signal: AbortSignal;
  log: Logger;
  /** Another HTTP (tests); node's fetch otherwise. */
  http?: MetadataHttp;
}

export function nodePlatformIo(d: NodePlatformIoDeps): PlatformIo {
  return {
    http: d.http ?? fetchMetadataHttp(d.signal),
    readVolume: async (labels, files) => {
      await devicesReady(d.state, d.signal);
      return readLabelledVolume(labels, files, d.mounter, d.mountDir);
    },
    log: d.log,
  };
}
