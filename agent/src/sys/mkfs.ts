import { runTool } from "./exec.js";

export type FilesystemType = "xfs" | "vfat";

/** Creates a filesystem with a label, replacing whatever the device held. */
export async function makeFilesystem(dev: string, fs: FilesystemType, label: string): Promise<void> {
  // --unsupported: xfsprogs >= 5.19 refuses filesystems under 300 MB, and STATE is 100 MiB (as on Talos).
  if (fs === "xfs") await runTool("mkfs.xfs", ["-f", "-q", "--unsupported", "-L", label, dev]);
  else await runTool("mkfs.vfat", ["-F", "32", "-n", label, dev]);
}

/** The filesystem type blkid finds on a device, or undefined when it holds none it knows. */
export async function probeFilesystem(dev: string): Promise<string | undefined> {
  try {
    return (await runTool("blkid", ["-p", "-o", "value", "-s", "TYPE", dev])).trim() || undefined;
  } catch {
    // blkid exits 2 when it finds no signature
    return undefined;
  }
}

/** The device holding a filesystem labelled `label` (blkid -L), or undefined. */
export async function findByLabel(label: string): Promise<string | undefined> {
  try {
    return (await runTool("blkid", ["-L", label])).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A filesystem's UUID as blkid reports it. */
export async function filesystemUuid(dev: string): Promise<string> {
  return (await runTool("blkid", ["-p", "-o", "value", "-s", "UUID", dev])).trim();
}
