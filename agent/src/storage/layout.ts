// The system disk's partitions in Talos's GRUB layout (reference §8.1), in order.

import { legacyBiosBootable, type PartitionRequest } from "./gpt.js";

export type SystemPartitionName = "EFI" | "BIOS" | "BOOT" | "META" | "STATE" | "EPHEMERAL";

export interface SystemPartition extends PartitionRequest {
  name: SystemPartitionName;
  /** Filesystem made at install time; STATE and EPHEMERAL are formatted on first mount instead. */
  installFs?: "vfat" | "xfs";
}

const MiB = 1024 * 1024;
const linuxData = "0FC63DAF-8483-4772-8E79-3D69D8477DE4";

export function systemLayout(): SystemPartition[] {
  return [
    { name: "EFI", typeGuid: "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", sizeBytes: 100 * MiB, installFs: "vfat" },
    {
      name: "BIOS",
      typeGuid: "21686148-6449-6E6F-744E-656564454649",
      sizeBytes: 1 * MiB,
      attributes: legacyBiosBootable,
    },
    { name: "BOOT", typeGuid: linuxData, sizeBytes: 1000 * MiB, installFs: "xfs" },
    { name: "META", typeGuid: linuxData, sizeBytes: 1 * MiB },
    { name: "STATE", typeGuid: linuxData, sizeBytes: 100 * MiB },
    { name: "EPHEMERAL", typeGuid: linuxData, sizeBytes: 0 },
  ];
}

/** Filesystems formatted by machined on first mount (reference §8.1). */
export const volumeFilesystems: Readonly<Record<"STATE" | "EPHEMERAL", "xfs">> = { STATE: "xfs", EPHEMERAL: "xfs" };
