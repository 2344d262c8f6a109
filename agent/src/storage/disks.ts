import type { BlockSysfs } from "../sys/block.js";

/** storage.Disk.DiskType numbers. */
export const DiskType = { UNKNOWN: 0, SSD: 1, HDD: 2, NVME: 3, SD: 4 } as const;

/** One `storage.Disk` message (snake_case fields as in the proto). */
export interface DiskInfo {
  size: number;
  model: string;
  device_name: string;
  name: string;
  serial: string;
  modalias: string;
  uuid: string;
  wwid: string;
  type: number;
  bus_path: string;
  system_disk: boolean;
  subsystem: string;
  readonly: boolean;
}

// As Talos's disk list (go-blockdevice's disk.List): no optical drives, SCSI generic nodes, or virtual devices.
const notDisks = ["sg", "sr", "loop", "md", "dm-", "ram"];

function diskType(dev: string, sysfs: BlockSysfs): number {
  if (dev.startsWith("nvme")) return DiskType.NVME;
  if (dev.startsWith("mmcblk")) {
    const t = sysfs.attr(dev, "device/type");
    return t === "SD" || t === "MMC" || t === undefined ? DiskType.SD : DiskType.UNKNOWN;
  }
  const rotational = sysfs.attr(dev, "queue/rotational");
  if (rotational === "1") return DiskType.HDD;
  if (rotational === "0") return DiskType.SSD;
  return DiskType.UNKNOWN;
}

/** Bus path as Talos shows it: the device's sysfs path below /sys/devices, without the block suffix. */
function busPath(dev: string, sysfs: BlockSysfs): string {
  const real = sysfs.resolve(dev);
  if (!real) return "";
  let p = real.replace(/^.*?\/sys\/devices/, "");
  const blockAt = p.lastIndexOf(`/block/${dev}`);
  if (blockAt >= 0) p = p.slice(0, blockAt);
  return p;
}

/**
 * Lists the machine's disks from sysfs, as StorageService.Disks reports them.
 * `systemDisk` names the device the OS is installed on (e.g. "sda"), if any.
 */
export function listDisks(sysfs: BlockSysfs, opts: { systemDisk?: string } = {}): DiskInfo[] {
  const out: DiskInfo[] = [];
  for (const dev of sysfs.devices()) {
    if (notDisks.some((p) => dev.startsWith(p))) continue;
    const sectors = Number(sysfs.attr(dev, "size") ?? "0");
    if (!Number.isFinite(sectors) || sectors <= 0) continue;
    out.push({
      size: sectors * 512, // sysfs counts 512-byte sectors whatever the logical block size
      model: sysfs.attr(dev, "device/model") ?? "",
      device_name: `/dev/${dev}`,
      name: sysfs.attr(dev, "device/name") ?? "",
      serial: sysfs.attr(dev, "device/serial") ?? sysfs.attr(dev, "serial") ?? "",
      modalias: sysfs.attr(dev, "device/modalias") ?? "",
      uuid: sysfs.attr(dev, "uuid") ?? sysfs.attr(dev, "device/uuid") ?? "",
      wwid: sysfs.attr(dev, "wwid") ?? sysfs.attr(dev, "device/wwid") ?? "",
      type: diskType(dev, sysfs),
      bus_path: busPath(dev, sysfs),
      system_disk: opts.systemDisk === dev,
      subsystem: sysfs.resolve(dev, "subsystem") ?? "",
      readonly: sysfs.attr(dev, "ro") === "1",
    });
  }
  return out;
}
