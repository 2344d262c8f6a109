// What the platform offers a node at boot: its PlatformMetadata and, when asked, a machine
// configuration: metal's talos.config= (a URL, or metal-iso: a volume with that label holding
// config.yaml), nocloud's cidata volume. Talos's platform Configuration(), for these two.

import path from "node:path";
import { describeError, SystemError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { PlatformNetwork } from "../../controllers/runtime/platform-network.js";
import type { PlatformMetadataSpec } from "../../resources/catalog/runtime.js";
import type { ResourceState } from "../../resources/state.js";
import type { SystemIdentity } from "../../sys/dmi.js";
import type { Mounter } from "../../sys/mount.js";
import type { Platform } from "../platform.js";
import { downloadConfig, gunzipIfCompressed, type DownloadOptions } from "./download.js";
import { readLabelledVolume } from "./labelled-volume.js";
import { parseNocloudNetwork, type NocloudNetworkConfig } from "../../network/nocloud-network.js";
import { splitFqdn } from "./network-config.js";
import { nocloudFiles, nocloudLabels, nocloudMetadata, nocloudPlatformMetadata } from "./nocloud.js";
import { substituteConfigUrl, urlVariablesUsed } from "./url.js";
import { urlValues } from "./url-values.js";
import { devicesReady } from "../devices-ready.js";

/** The platform's configuration source failed (not: it has none). */
export class ConfigSourceError extends SystemError {}

export const metalIsoLabel = "metal-iso";

export interface AcquireDeps {
  platform: Platform;
  cmdline: Map<string, string[]>;
  state: ResourceState;
  mounter: Mounter;
  /** Where a config volume is mounted while it is read. */
  mountDir: string;
  identity(): SystemIdentity;
  meta(tag: number): string | undefined;
  signal: AbortSignal;
  log: Logger;
  /** Resolves once the links are up and the node has an address (or that wait gave up): a download waits for it, as Talos's netutils.Wait. */
  networkReady(signal: AbortSignal): Promise<void>;
  /** Retry timing for talos.config= downloads (tests shorten it). */
  download?: Pick<DownloadOptions, "attemptTimeoutMs" | "totalTimeoutMs" | "backoffMs" | "wait">;
}

export interface Acquired {
  metadata: PlatformMetadataSpec;
  /** Network settings the platform gives (nocloud). */
  network?: PlatformNetwork;
  /** The configuration's bytes (gzip unpacked) and where they came from; absent when the platform has none. */
  config?: { data: Buffer; source: string };
}

/** A volume is looked for by its label only once udev has settled the devices (Talos's WaitForDevicesReady). */
async function waitForDevices(d: AcquireDeps): Promise<void> {
  d.log.info("waiting for devices to be ready");
  await devicesReady(d.state, d.signal);
  d.signal.throwIfAborted();
}

async function metal(d: AcquireDeps, wantConfig: boolean): Promise<Acquired> {
  const hostname = d.cmdline.get("talos.hostname")?.at(-1);
  const uuid = d.identity().uuid;
  const metadata: PlatformMetadataSpec = {
    platform: "metal",
    ...(hostname ? { hostname } : {}),
    ...(uuid ? { instanceId: uuid } : {}),
  };
  const option = d.cmdline.get("talos.config")?.at(-1);
  if (!wantConfig || option === undefined || option === "" || option === "none") return { metadata };
  if (option === metalIsoLabel) {
    await waitForDevices(d);
    const volume = await readLabelledVolume([metalIsoLabel], ["config.yaml"], d.mounter, d.mountDir).catch(
      (err: unknown) => {
        throw new ConfigSourceError(`failed to read the ${metalIsoLabel} volume`, {}, { cause: err });
      },
    );
    if (!volume)
      throw new ConfigSourceError(`failed to find ${metalIsoLabel} iso: no volume labelled ${metalIsoLabel}`);
    const data = volume.files.get("config.yaml");
    if (!data)
      throw new ConfigSourceError(`read config: the ${metalIsoLabel} volume ${volume.device} has no config.yaml`, {
        device: volume.device,
      });
    return { metadata, config: { data: gunzipIfCompressed(data), source: `${metalIsoLabel} (${volume.device})` } };
  }
  // A node that is not installed looks for its config without waiting for the network; a download needs it.
  await d.networkReady(d.signal);
  d.signal.throwIfAborted();
  const used = urlVariablesUsed(option);
  const data = await downloadConfig({
    ...d.download,
    endpoint: async () => substituteConfigUrl(option, urlValues(used, d)),
    signal: d.signal,
    log: d.log,
  }).catch((err: unknown) => {
    if (d.signal.aborted) throw err;
    throw new ConfigSourceError(`error acquiring via platform metal`, { url: option }, { cause: err });
  });
  return { metadata, config: { data, source: option } };
}

async function nocloud(d: AcquireDeps, wantConfig: boolean): Promise<Acquired> {
  await waitForDevices(d);
  const names = Object.values(nocloudFiles);
  const volume = await readLabelledVolume(nocloudLabels, names, d.mounter, d.mountDir).catch((err: unknown) => {
    throw new ConfigSourceError("failed to read the cidata volume", {}, { cause: err });
  });
  if (!volume) {
    d.log.warn("nocloud: no volume labelled cidata or CIDATA");
    return { metadata: { platform: "nocloud" } };
  }
  const text = (name: string) => volume.files.get(name)?.toString("utf8");
  const meta = nocloudMetadata(text(nocloudFiles.metaData), text(nocloudFiles.userData));
  const userData = volume.files.get(nocloudFiles.userData);
  const metadata = nocloudPlatformMetadata(meta);
  let networkConfig: NocloudNetworkConfig | undefined;
  try {
    networkConfig = parseNocloudNetwork(text(nocloudFiles.networkConfig));
  } catch (err) {
    d.log.error("nocloud: network-config ignored", { error: describeError(err) });
  }
  const network = {
    ...(metadata.hostname ? { hostname: splitFqdn(metadata.hostname) } : {}),
    ...(networkConfig ? { nocloud: networkConfig } : {}),
  };
  // An empty user-data is no configuration (Talos: ErrNoConfigSource).
  if (!wantConfig || !userData || userData.length === 0) return { metadata, network };
  return {
    metadata,
    network,
    config: {
      data: gunzipIfCompressed(userData),
      source: `nocloud (${path.join(volume.device, nocloudFiles.userData)})`,
    },
  };
}

/** The platform's metadata, and its configuration when `wantConfig` (a node without a stored one). */
export async function acquireFromPlatform(d: AcquireDeps, wantConfig: boolean): Promise<Acquired> {
  switch (d.platform.name) {
    case "metal":
      return metal(d, wantConfig);
    case "nocloud":
      return nocloud(d, wantConfig);
    default:
      return { metadata: { platform: d.platform.name } };
  }
}
