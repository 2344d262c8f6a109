// machine.install.disk / diskSelector → the device to install to, as Talos v1.7
// matches disks: every field given must match; string fields are patterns where
// `*` stands for any run of characters; size is "4GB", ">= 1TB", "<= 2TB" or a
// byte count, compared exactly when no operator is given.

import type { InstallDiskSelector } from "../config/types/v1alpha1.js";
import { InvalidInputError } from "../errors.js";
import { DiskType, type DiskInfo } from "./disks.js";

/** machine.install.diskSelector, as the config module types it. */
export type DiskSelector = InstallDiskSelector;

// Units as go-humanize parses them: decimal for "kb"/"k", binary for "kib"/"ki".
const units: Record<string, number> = {
  "": 1,
  b: 1,
  kb: 1e3,
  k: 1e3,
  mb: 1e6,
  m: 1e6,
  gb: 1e9,
  g: 1e9,
  tb: 1e12,
  t: 1e12,
  pb: 1e15,
  p: 1e15,
  eb: 1e18,
  e: 1e18,
  kib: 2 ** 10,
  ki: 2 ** 10,
  mib: 2 ** 20,
  mi: 2 ** 20,
  gib: 2 ** 30,
  gi: 2 ** 30,
  tib: 2 ** 40,
  ti: 2 ** 40,
  pib: 2 ** 50,
  pi: 2 ** 50,
  eib: 2 ** 60,
  ei: 2 ** 60,
};

/** A byte count with an optional unit ("10GB", "1.5 TiB", "1,000"). */
export function parseByteSize(text: string): number {
  const s = text.trim();
  const digits = /^[\d.,]*/.exec(s)![0];
  const value = Number(digits.replace(/,/g, ""));
  if (digits === "" || !Number.isFinite(value))
    throw new InvalidInputError(`failed to parse disk size ${text}: invalid number ${JSON.stringify(digits)}`, {
      size: text,
    });
  const unit = s.slice(digits.length).trim().toLowerCase();
  const multiplier = units[unit];
  if (multiplier === undefined)
    throw new InvalidInputError(`failed to parse disk size ${text}: unhandled size name: ${unit}`, { size: text });
  return Math.floor(value * multiplier);
}

/** A size condition: an operator (>=, <=, >, <, ==, or none for equality) and a size. */
export function sizeMatcher(spec: string | number): (bytes: number) => boolean {
  if (typeof spec === "number") return (b) => b === spec;
  const m = /^\s*(>=|<=|>|<|==)?\s*(.*)$/s.exec(spec)!;
  const want = parseByteSize(m[2]!);
  switch (m[1]) {
    case ">=":
      return (b) => b >= want;
    case "<=":
      return (b) => b <= want;
    case ">":
      return (b) => b > want;
    case "<":
      return (b) => b < want;
    default:
      return (b) => b === want;
  }
}

/** Talos's disk patterns: `*` matches any run of characters, everything else is literal. */
export function globMatch(pattern: string, value: string): boolean {
  if (pattern === "*") return true;
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || value.length < first.length + last.length) return false;
  let at = first.length;
  for (const middle of parts.slice(1, -1)) {
    const found = value.indexOf(middle, at);
    if (found < 0) return false;
    at = found + middle.length;
  }
  return value.length - last.length >= at && value.endsWith(last);
}

const typeNumbers = { ssd: DiskType.SSD, hdd: DiskType.HDD, nvme: DiskType.NVME, sd: DiskType.SD } as const;

export function matchesSelector(disk: DiskInfo, s: DiskSelector): boolean {
  const patterns: [string | undefined, string][] = [
    [s.uuid, disk.uuid],
    [s.wwid, disk.wwid],
    [s.model, disk.model],
    [s.name, disk.name],
    [s.serial, disk.serial],
    [s.modalias, disk.modalias],
    [s.busPath, disk.bus_path],
  ];
  if (s.size !== undefined && !sizeMatcher(s.size)(disk.size)) return false;
  if (patterns.some(([pattern, value]) => pattern && !globMatch(pattern, value))) return false;
  if (s.type && disk.type !== typeNumbers[s.type]) return false;
  return true;
}

/** Follows a device path's symlinks (/dev/disk/by-id/x → /dev/vda); undefined when nothing is there. */
export type DeviceNode = (devicePath: string) => string | undefined;

/**
 * The install disk: the first of the node's disks (as Disks lists them) the selector matches, else the
 * disk the path names. As Talos, a missing path or an unmatched selector is refused; beyond Talos (whose
 * installer would fail later), so is a path that is none of those disks (an optical drive, a partition, a
 * loop device) and a read-only disk.
 */
export function chooseInstallDisk(
  install: { disk?: string; diskSelector?: DiskSelector },
  disks: readonly DiskInfo[],
  deviceNode: DeviceNode,
): string {
  const chosen = namedDisk(install, disks, deviceNode);
  if (chosen.readonly)
    throw new InvalidInputError(`specified install disk is read-only: ${JSON.stringify(chosen.device_name)}`, {
      disk: chosen.device_name,
    });
  return chosen.device_name;
}

/** Why the node cannot install to what `install` names (chooseInstallDisk's refusal), or undefined. */
export function installDiskProblem(
  install: { disk?: string; diskSelector?: DiskSelector },
  disks: readonly DiskInfo[],
  deviceNode: DeviceNode,
): string | undefined {
  try {
    chooseInstallDisk(install, disks, deviceNode);
    return undefined;
  } catch (err) {
    if (err instanceof InvalidInputError) return err.message;
    throw err;
  }
}

function namedDisk(
  install: { disk?: string; diskSelector?: DiskSelector },
  disks: readonly DiskInfo[],
  deviceNode: DeviceNode,
): DiskInfo {
  const selector = install.diskSelector;
  // As Talos: a selector with no field set selects nothing, and the disk path applies.
  if (selector && Object.values(selector).some((v) => v !== undefined && v !== "")) {
    const match = disks.find((d) => matchesSelector(d, selector));
    if (!match) throw new InvalidInputError("no disk found matching provided parameters", { selector });
    return match;
  }
  if (!install.disk) throw new InvalidInputError('an install disk is required in "metal" mode');
  const node = deviceNode(install.disk);
  if (node === undefined)
    throw new InvalidInputError(`specified install disk does not exist: ${JSON.stringify(install.disk)}`, {
      disk: install.disk,
    });
  const disk = disks.find((d) => d.device_name === node);
  if (!disk)
    throw new InvalidInputError(
      `specified install disk is not a disk the node can install to: ${JSON.stringify(install.disk)} (talosctl disks lists those)`,
      { disk: install.disk, node },
    );
  return disk;
}
