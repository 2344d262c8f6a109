// The cloud images the e2e tests boot, packed from the metal disk image by scripts/platform-images.sh
// when one is missing or older than that image.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "./qemu.js";

export type Arch = "amd64" | "arm64";

export const metalDiskImage = (arch: Arch = "amd64") => path.join(repoRoot, "_out", `metal-${arch}.raw.zst`);

/** Where a platform's packed image lives, e.g. `aws-amd64.raw.xz`. */
export const cloudImageFile = (file: string) => path.join(repoRoot, "_out", file);

/** Packs again the images (by platform and architecture, the file each gives) that are missing or older than their metal image. */
export function ensureCloudImages(images: { platform: string; image: string; arch?: Arch }[]): void {
  for (const arch of ["amd64", "arm64"] as const) {
    const ofArch = images.filter((i) => (i.arch ?? "amd64") === arch);
    if (ofArch.length === 0) continue;
    const metal = fs.statSync(metalDiskImage(arch)).mtimeMs;
    const stale = ofArch.filter(({ image }) => {
      const file = cloudImageFile(image);
      return !fs.existsSync(file) || fs.statSync(file).mtimeMs < metal;
    });
    if (stale.length === 0) continue;
    execFileSync("bash", ["scripts/platform-images.sh", arch, stale.map((c) => c.platform).join(",")], {
      cwd: repoRoot,
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
}
