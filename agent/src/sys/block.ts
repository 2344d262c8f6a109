import { readdirSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";

/** Read-only view of /sys/block (and of device paths), narrow so disk discovery can be tested with a fake tree. */
export interface BlockSysfs {
  /** Names of the block devices (entries of /sys/block). */
  devices(): string[];
  /** Trimmed content of /sys/block/<dev>/<attr>, or undefined when absent or unreadable. */
  attr(dev: string, attr: string): string | undefined;
  /** Resolved path of /sys/block/<dev>[/<rel>] (symlinks followed), or undefined. */
  resolve(dev: string, rel?: string): string | undefined;
  /** A device path with its symlinks followed (/dev/disk/by-id/x → /dev/vda), or undefined when nothing is there. */
  deviceNode(devicePath: string): string | undefined;
}

export function sysfsBlock(sysRoot = "/sys"): BlockSysfs {
  const base = path.join(sysRoot, "block");
  return {
    devices() {
      try {
        return readdirSync(base).sort();
      } catch {
        return [];
      }
    },
    attr(dev, attr) {
      try {
        return readFileSync(path.join(base, dev, attr), "utf8").trim();
      } catch {
        return undefined;
      }
    },
    resolve(dev, rel) {
      try {
        return realpathSync(rel ? path.join(base, dev, rel) : path.join(base, dev));
      } catch {
        return undefined;
      }
    },
    deviceNode(devicePath) {
      try {
        return realpathSync(devicePath);
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * An in-memory sysfs for tests: attributes keyed "dev/attr", links keyed "dev" or "dev/rel"; each device
 * has its node /dev/<dev>, and `nodes` adds other paths (a symlink to its target, or a path to itself).
 */
export function fakeBlockSysfs(
  attrs: Record<string, string>,
  links: Record<string, string> = {},
  nodes: Record<string, string> = {},
): BlockSysfs {
  const devices = () => [...new Set(Object.keys(attrs).map((k) => k.split("/")[0]!))].sort();
  return {
    devices,
    attr: (dev, attr) => attrs[`${dev}/${attr}`]?.trim(),
    resolve: (dev, rel) => links[rel ? `${dev}/${rel}` : dev],
    deviceNode: (p) => nodes[p] ?? (devices().some((d) => `/dev/${d}` === p) ? p : undefined),
  };
}
