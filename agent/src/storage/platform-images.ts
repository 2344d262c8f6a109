// The disk image each cloud imports, as Talos v1.7's imager names and packs it
// (pkg/imager/profile/default.go): the platform's disk size, disk format and packing, and
// the kernel arguments its platform adds (each platform's KernelArgs()). Every one is made
// from the one metal disk image: only grub.cfg's command line and the disk's size differ.

import { InvalidInputError } from "../errors.js";

export type DiskFormat = "raw" | "qcow2" | "vpc" | "ova";
/** How the disk file is packed: compressed, put in a tar (GCE), or left as it is (an OVA is already a tar). */
export type Packing = "xz" | "gz" | "zst" | "tar.gz" | "none";

export interface PlatformImage {
  /** talos.platform= and the file name's first part. */
  platform: string;
  /** The disk's size; undefined keeps the metal image's own (Talos's MinRAWDiskSize profiles). */
  diskSizeMiB?: number;
  format: DiskFormat;
  /** qemu-img's -o for the format. */
  formatOptions: string;
  packing: Packing;
  /** The arguments the platform puts on the kernel command line after talos.platform=. */
  kernelArgs: readonly string[];
}

// Talos's DefaultRAWDiskSize.
const defaultDiskMiB = 8192;
const noIfnames = "net.ifnames=0";
const noDashboard = "talos.dashboard.disabled=1";
const ttyFirst = ["console=tty1", "console=ttyS0", noIfnames];

const raw = (
  platform: string,
  packing: Packing,
  kernelArgs: readonly string[],
  diskSizeMiB?: number,
): PlatformImage => ({
  platform,
  ...(diskSizeMiB !== undefined ? { diskSizeMiB } : {}),
  format: "raw",
  formatOptions: "",
  packing,
  kernelArgs,
});
const qcow2 = (platform: string, kernelArgs: readonly string[], diskSizeMiB: number): PlatformImage => ({
  platform,
  diskSizeMiB,
  format: "qcow2",
  formatOptions: "cluster_size=8k",
  packing: "xz",
  kernelArgs,
});

/** Every cloud image, by platform name. metal's (metal-ARCH.raw.zst) is the disk image itself. */
export const platformImages: Readonly<Record<string, PlatformImage>> = {
  akamai: raw("akamai", "gz", ["console=ttyS0", "console=tty0", "console=tty1", noIfnames]),
  aws: raw("aws", "xz", ttyFirst, defaultDiskMiB),
  azure: {
    platform: "azure",
    diskSizeMiB: defaultDiskMiB,
    format: "vpc",
    // force_size: the virtual size is the disk's, not rounded to a CHS geometry (Azure wants whole MiB).
    formatOptions: "subformat=fixed,force_size",
    packing: "xz",
    kernelArgs: ["console=ttyS0,115200n8", "earlyprintk=ttyS0,115200", "rootdelay=300", noIfnames, noDashboard],
  },
  "digital-ocean": raw(
    "digital-ocean",
    "gz",
    ["console=ttyS0", "console=tty0", "console=tty1", noIfnames],
    defaultDiskMiB,
  ),
  exoscale: qcow2("exoscale", ttyFirst, 10 * 1024),
  gcp: raw("gcp", "tar.gz", ["console=ttyS0", noIfnames, noDashboard], defaultDiskMiB),
  hcloud: raw("hcloud", "xz", ttyFirst),
  nocloud: raw("nocloud", "xz", ttyFirst),
  opennebula: raw("opennebula", "xz", ttyFirst),
  openstack: raw("openstack", "xz", ttyFirst),
  oracle: qcow2("oracle", [...ttyFirst, noDashboard], defaultDiskMiB),
  scaleway: raw("scaleway", "xz", [...ttyFirst, noDashboard]),
  upcloud: raw("upcloud", "xz", [noIfnames], defaultDiskMiB),
  vmware: {
    platform: "vmware",
    diskSizeMiB: defaultDiskMiB,
    format: "ova",
    formatOptions: "compat6,subformat=streamOptimized,adapter_type=lsilogic",
    packing: "none",
    kernelArgs: ["talos.config=guestinfo", "console=tty0", "console=ttyS0", "earlyprintk=ttyS0,115200", noIfnames],
  },
  vultr: raw("vultr", "xz", [noIfnames], defaultDiskMiB),
};

const extensions: Record<DiskFormat, string> = { raw: "raw", qcow2: "qcow2", vpc: "vhd", ova: "ova" };

/** The output's file name, as Talos's imager names it: `aws-amd64.raw.xz`, `vmware-amd64.ova`. */
export function imageFileName(image: PlatformImage, arch: string): string {
  const packed = image.packing === "none" ? "" : `.${image.packing}`;
  return `${image.platform}-${arch}.${extensions[image.format]}${packed}`;
}

/** `all` or a comma-separated list of names, each a known platform image; in the table's order. */
export function selectPlatformImages(list: string): PlatformImage[] {
  const names = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.includes("all")) return Object.values(platformImages);
  const unknown = names.filter((n) => !Object.hasOwn(platformImages, n));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `unknown platform image ${unknown.join(", ")} (known: ${Object.keys(platformImages).join(", ")}, all)`,
      { unknown },
    );
  }
  return Object.values(platformImages).filter((i) => names.includes(i.platform));
}

const argKey = (arg: string) => arg.split("=", 1)[0]!;

/**
 * The platform's command line from the metal one: talos.platform=, metal's consoles and any
 * argument the platform sets itself give way to the platform's arguments, first as Talos's
 * imager puts them, then the rest (the defaults every image carries).
 */
export function platformCmdline(metalCmdline: string, image: PlatformImage): string {
  const replaced = new Set(["talos.platform", "console", ...image.kernelArgs.map(argKey)]);
  const rest = metalCmdline.split(/\s+/).filter((a) => a !== "" && !replaced.has(argKey(a)));
  return [`talos.platform=${image.platform}`, ...image.kernelArgs, ...rest].join(" ");
}
