// Link facts rtnetlink does not report, read from sysfs: driver, bus path,
// PCI vendor:device, speed and duplex. Every field is best effort (virtual links
// have no device; speed is -1 while the link is down).

import { promises as fs } from "node:fs";
import path from "node:path";

export interface SysfsLinkInfo {
  driver?: string;
  busPath?: string;
  /** "VVVV:DDDD", upper-case hex. */
  pciID?: string;
  speedMbit?: number;
  /** ethtool DUPLEX_*: 0 half, 1 full, 255 unknown. */
  duplex?: number;
}

const PCI_BDF = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

async function readTrim(file: string): Promise<string | undefined> {
  try {
    return (await fs.readFile(file, "utf8")).trim();
  } catch {
    return undefined;
  }
}

/** Reader for links under `<sysRoot>/class/net`. */
export function sysfsLinkInfo(sysRoot = "/sys"): (linkName: string) => Promise<SysfsLinkInfo> {
  return async (linkName) => {
    const base = path.join(sysRoot, "class", "net", linkName);
    const info: SysfsLinkInfo = {};
    const device = await fs.realpath(path.join(base, "device")).catch(() => undefined);
    if (device) {
      const driver = await fs.readlink(path.join(base, "device", "driver")).catch(() => undefined);
      if (driver) info.driver = path.basename(driver);
      // The PCI function the device hangs off (virtio devices sit one level below it).
      const parts = device.split(path.sep);
      const idx = parts.findLastIndex((p) => PCI_BDF.test(p));
      if (idx >= 0) {
        info.busPath = parts[idx]!;
        const pciDir = parts.slice(0, idx + 1).join(path.sep);
        const vendor = await readTrim(path.join(pciDir, "vendor"));
        const dev = await readTrim(path.join(pciDir, "device"));
        if (vendor && dev) info.pciID = `${vendor.replace(/^0x/, "")}:${dev.replace(/^0x/, "")}`.toUpperCase();
      } else {
        info.busPath = path.basename(device);
      }
    }
    const speed = Number(await readTrim(path.join(base, "speed")));
    if (Number.isInteger(speed) && speed > 0) info.speedMbit = speed;
    const duplex = await readTrim(path.join(base, "duplex"));
    info.duplex = duplex === "full" ? 1 : duplex === "half" ? 0 : 255;
    return info;
  };
}
