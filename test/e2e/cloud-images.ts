// The cloud images the e2e tests boot, packed from the metal disk image by scripts/platform-images.sh
// when one is missing or older than that image.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "./qemu.js";

export const metalDiskImage = path.join(repoRoot, "_out", "metal-amd64.raw.zst");

/** Where a platform's packed amd64 image lives, e.g. `aws-amd64.raw.xz`. */
export const cloudImageFile = (file: string) => path.join(repoRoot, "_out", file);

/** Packs again the images (by platform, the file each gives) that are missing or older than the metal image. */
export function ensureCloudImages(images: { platform: string; image: string }[]): void {
  const metal = fs.statSync(metalDiskImage).mtimeMs;
  const stale = images.filter(({ image }) => {
    const file = cloudImageFile(image);
    return !fs.existsSync(file) || fs.statSync(file).mtimeMs < metal;
  });
  if (stale.length === 0) return;
  execFileSync("bash", ["scripts/platform-images.sh", "amd64", stale.map((c) => c.platform).join(",")], {
    cwd: repoRoot,
    stdio: ["ignore", "ignore", "inherit"],
  });
}
