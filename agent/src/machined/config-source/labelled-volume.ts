import { promises as fs } from "node:fs";
import path from "node:path";
import { findByLabel, probeFilesystem } from "../../sys/mkfs.js";
import type { Mounter } from "../../sys/mount.js";

export interface VolumeFiles {
  device: string;
  /** Each asked-for file the volume holds (absent ones are missing). */
  files: Map<string, Buffer>;
}

/**
 * Reads files from the first volume carrying one of `labels` (mounted read-only for the
 * read, then unmounted); undefined when no volume has such a label.
 */
export async function readLabelledVolume(
  labels: readonly string[],
  names: readonly string[],
  mounter: Mounter,
  mountDir: string,
): Promise<VolumeFiles | undefined> {
  let device: string | undefined;
  for (const label of labels) {
    device = await findByLabel(label);
    if (device) break;
  }
  if (!device) return undefined;
  const fstype = (await probeFilesystem(device)) ?? "iso9660";
  await fs.mkdir(mountDir, { recursive: true });
  await mounter.mount(device, mountDir, fstype, ["ro"]);
  try {
    const files = new Map<string, Buffer>();
    for (const name of names) {
      const data = await fs.readFile(path.join(mountDir, name)).catch(() => undefined);
      if (data) files.set(name, data);
    }
    return { device, files };
  } finally {
    await mounter.unmount(mountDir);
  }
}
