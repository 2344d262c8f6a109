// STATE and EPHEMERAL: formatted on first mount (the installer leaves them blank),
// mounted, and wiped by reset so the next mount formats them again.

import { promises as fs } from "node:fs";
import type { Logger } from "../log.js";
import { openBlockTarget } from "../sys/blockdev.js";
import { makeFilesystem, probeFilesystem } from "../sys/mkfs.js";
import type { Mounter } from "../sys/mount.js";
import { volumeFilesystems } from "./layout.js";
import { wipeDiskHeads } from "./wipe.js";

export type VolumeName = keyof typeof volumeFilesystems;

export interface MountedVolume {
  name: VolumeName;
  source: string;
  target: string;
  fstype: string;
  /** True when this mount formatted a blank partition. */
  formatted: boolean;
}

export async function mountSystemVolume(
  name: VolumeName,
  dev: string,
  target: string,
  mounter: Mounter,
  log: Logger,
): Promise<MountedVolume> {
  const fstype = volumeFilesystems[name];
  // A machined that init restarted finds its predecessor's mounts: the volume is already in place.
  if (mounter.list().some((m) => m.source === dev && m.target === target && m.fstype === fstype)) {
    log.info(`${name} already mounted, kept`, { device: dev, target });
    return { name, source: dev, target, fstype, formatted: false };
  }
  const found = await probeFilesystem(dev);
  let formatted = false;
  if (found !== fstype) {
    log.info(`formatting ${name}`, { device: dev, found: found ?? "nothing", fstype });
    await makeFilesystem(dev, fstype, name);
    formatted = true;
  }
  await fs.mkdir(target, { recursive: true });
  await mounter.mount(dev, target, fstype);
  return { name, source: dev, target, fstype, formatted };
}

/** Clears a volume's signatures: the next mount formats it anew. */
export async function wipeVolume(dev: string): Promise<void> {
  const target = await openBlockTarget(dev);
  try {
    await wipeDiskHeads(target);
  } finally {
    await target.close();
  }
}
