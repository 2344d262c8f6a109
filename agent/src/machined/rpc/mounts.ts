// MachineService.Mounts (talosctl mounts): every line of /proc/mounts with the size and
// free space statfs gives for it. As on Talos: a mount point that is not a reachable
// directory is listed with zero sizes, and a statfs failure fails the call.

import { promises as fs } from "node:fs";
import { SystemError } from "../../errors.js";
import { pathErrorText } from "./errno.js";

export interface MountStat {
  filesystem: string;
  size: number;
  available: number;
  mounted_on: string;
}

/** Source and mount point of each /proc/mounts line, as the kernel wrote them (octal escapes kept, as Talos keeps them). */
export function parseProcMounts(text: string): { filesystem: string; mountedOn: string }[] {
  const out = [];
  for (const line of text.split("\n")) {
    const [filesystem, mountedOn] = line.trim().split(/\s+/);
    if (filesystem && mountedOn) out.push({ filesystem, mountedOn });
  }
  return out;
}

export async function mountStats(mountsFile = "/proc/mounts"): Promise<{ messages: { stats: MountStat[] }[] }> {
  const stats: MountStat[] = [];
  const failures: string[] = [];
  for (const m of parseProcMounts(await fs.readFile(mountsFile, "utf8"))) {
    const entry = { filesystem: m.filesystem, size: 0, available: 0, mounted_on: m.mountedOn };
    const isDir = await fs.stat(m.mountedOn).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (isDir) {
      try {
        const s = await fs.statfs(m.mountedOn);
        entry.size = s.blocks * s.bsize;
        entry.available = s.bavail * s.bsize;
      } catch (err) {
        failures.push(pathErrorText("statfs", m.mountedOn, err));
      }
    }
    stats.push(entry);
  }
  if (failures.length > 0) throw new SystemError(failures.join("; "), { failures });
  return { messages: [{ stats }] };
}
