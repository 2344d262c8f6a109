// machine.install.disk / diskSelector → the device to install to, as Talos matches
// disks: every field given must match; model, serial, modalias, busPath and name
// are glob patterns; size is "4GB", ">= 1TB", "<= 2TB" or a byte count.

import type { InstallDiskSelector } from "../config/types/v1alpha1.js";
import { InvalidInputError } from "../errors.js";
import { DiskType, type DiskInfo } from "./disks.js";

/** machine.install.diskSelector, as the config module types it. */
export type DiskSelector = InstallDiskSelector;

const units: Record<string, number> = { "": 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, pb: 1e15, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40, pib: 2 ** 50 };

/** A size matcher: exact sizes compare as Talos does, within the unit's rounding. */
export function sizeMatcher(spec: string | number): (bytes: number) => boolean {
  if (typeof spec === "number") return (b) => b === spec;
  const m = /^\s*(>=|<=|>|<|==)?\s*([\d.]+)\s*([a-zA-Z]*)\s*$/.exec(spec);
  const unit = m ? units[m[3]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new InvalidInputError(`invalid disk size selector ${JSON.stringify(spec)}`);
  const want = Number(m[2]) * unit;
  switch (m[1]) {
    case ">=": return (b) => b >= want;
    case "<=": return (b) => b <= want;
    case ">": return (b) => b > want;
    case "<": return (b) => b < want;
    default: return (b) => Math.round(b / unit) === Number(m[2]);
  }
}

function glob(pattern: string): (value: string) => boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
  return (v) => re.test(v);
}

const typeNumbers = { ssd: DiskType.SSD, hdd: DiskType.HDD, nvme: DiskType.NVME, sd: DiskType.SD } as const;

export function matchesSelector(disk: DiskInfo, s: DiskSelector): boolean {
  const checks: boolean[] = [];
  if (s.size !== undefined) checks.push(sizeMatcher(s.size)(disk.size));
  if (s.name) checks.push(glob(s.name)(disk.name));
  if (s.model) checks.push(glob(s.model)(disk.model));
  if (s.serial) checks.push(glob(s.serial)(disk.serial));
  if (s.modalias) checks.push(glob(s.modalias)(disk.modalias));
  if (s.busPath) checks.push(glob(s.busPath)(disk.bus_path));
  if (s.uuid) checks.push(disk.uuid === s.uuid);
  if (s.wwid) checks.push(disk.wwid === s.wwid);
  if (s.type) checks.push(disk.type === typeNumbers[s.type]);
  return checks.every(Boolean);
}

/** The install disk: the path given, else the first disk the selector matches (read-only and CD drives excluded). */
export function chooseInstallDisk(install: { disk?: string; diskSelector?: DiskSelector }, disks: readonly DiskInfo[]): string {
  if (install.diskSelector) {
    const match = disks.find((d) => !d.readonly && !d.device_name.startsWith("/dev/sr") && matchesSelector(d, install.diskSelector!));
    if (!match) throw new InvalidInputError("no disk found matching provided parameters", { selector: install.diskSelector });
    return match.device_name;
  }
  if (!install.disk) throw new InvalidInputError("an install disk is required in \"metal\" mode");
  if (!disks.some((d) => d.device_name === install.disk)) {
    throw new InvalidInputError(`specified install disk does not exist: ${JSON.stringify(install.disk)}`, { disk: install.disk });
  }
  return install.disk;
}
