// Makes the cloud images from the metal disk image (scripts/platform-images.sh runs it as
// root): for each platform a sparse copy whose grub.cfg boots with talos.platform=<name>
// and the platform's console settings, grown to the platform's disk size, then packed as
// its cloud imports it (storage/platform-images.ts has the table).
//
// usage: platform-images --metal RAW --arch amd64|arm64 --platforms all|aws,gcp,... --out-dir DIR --work-dir DIR [--threads N]

import { promises as fs } from "node:fs";
import path from "node:path";
import { describeError, InvalidInputError } from "../errors.js";
import { parseFlags } from "../flags.js";
import { logger } from "../log.js";
import { packImage } from "../storage/image-pack.js";
import { extendImage, setImageCmdline, type LoopDevices } from "../storage/platform-disk.js";
import { imageFileName, platformCmdline, selectPlatformImages } from "../storage/platform-images.js";
import { runTool } from "../sys/exec.js";
import { systemMounter } from "../sys/mount.js";

const log = logger("platform-images");
const MiB = 1024 * 1024;

const losetupLoops: LoopDevices = {
  attach: async (file, offset, size) =>
    (await runTool("losetup", ["-f", "--show", "-o", String(offset), "--sizelimit", String(size), file])).trim(),
  detach: async (device) => {
    await runTool("losetup", ["-d", device]);
  },
};

async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, {
    metal: "string",
    arch: "string",
    platforms: "string",
    "out-dir": "string",
    "work-dir": "string",
    threads: "string",
  });
  const need = (k: string) => {
    const v = flags[k];
    if (typeof v !== "string" || v === "") throw new InvalidInputError(`--${k} is required`);
    return v;
  };
  const metal = need("metal");
  const arch = need("arch");
  const images = selectPlatformImages(need("platforms"));
  const outDir = need("out-dir");
  const workDir = need("work-dir");
  const threads = Number(typeof flags["threads"] === "string" ? flags["threads"] : "2");
  await fs.mkdir(workDir, { recursive: true });
  const deps = { mounter: systemMounter(), loops: losetupLoops, mountDir: path.join(workDir, "boot") };
  for (const image of images) {
    const raw = path.join(workDir, `${image.platform}.raw`);
    const out = path.join(outDir, imageFileName(image, arch));
    try {
      await runTool("cp", ["--sparse=always", metal, raw]);
      const cmdline = await setImageCmdline(raw, (metalCmdline) => platformCmdline(metalCmdline, image), deps);
      if (image.diskSizeMiB !== undefined) await extendImage(raw, image.diskSizeMiB * MiB);
      await packImage(raw, image, `${out}.tmp`, { workDir, threads });
      await fs.rename(`${out}.tmp`, out);
      log.info("platform image written", { out, bytes: (await fs.stat(out)).size, cmdline });
    } finally {
      await fs.rm(raw, { force: true });
    }
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`platform-images: ${describeError(err)}\n`);
  process.exit(1);
});
