// Builds the metal disk image (scripts/image.sh runs it as root): the installed layout of
// agent/src/storage written by the same install code onto a loop device of a sparse file,
// STATE and EPHEMERAL formatted; a node booting it grows EPHEMERAL to its disk's end.
//
// usage: disk-image --out FILE --size-mib N --kernel FILE --initramfs FILE --cmdline "..." --arch amd64|arm64 [--grub-lib DIR]

import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describeError, InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import { contractTag } from "../machined/version.js";
import type { GptTable } from "../storage/gpt.js";
import { installToDisk } from "../storage/install.js";
import { volumeFilesystems } from "../storage/layout.js";
import { runTool } from "../sys/exec.js";
import { makeFilesystem } from "../sys/mkfs.js";
import { systemMounter } from "../sys/mount.js";
import { parseFlags } from "../flags.js";

const log = logger("disk-image");

async function losetup(args: string[]): Promise<string> {
  return (await runTool("losetup", args)).trim();
}

async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, {
    out: "string",
    "size-mib": "string",
    kernel: "string",
    initramfs: "string",
    cmdline: "string",
    arch: "string",
    "grub-lib": "string",
  });
  const need = (k: string) => {
    const v = flags[k];
    if (typeof v !== "string" || v === "") throw new InvalidInputError(`--${k} is required`);
    return v;
  };
  const out = need("out");
  const arch = need("arch");
  if (arch !== "amd64" && arch !== "arm64") throw new InvalidInputError(`--arch must be amd64 or arm64, not ${arch}`);
  const sizeMiB = Number(need("size-mib"));
  const work = await fs.mkdtemp(path.join(os.tmpdir(), "basalt-disk-image-"));
  const loops: string[] = [];
  await fs.rm(out, { force: true });
  await fs.writeFile(out, "");
  await fs.truncate(out, sizeMiB * 1024 * 1024);
  try {
    const disk = await losetup(["-f", "--show", out]);
    loops.push(disk);
    // Partition devices as loop devices over each range: no dependence on the host kernel's partition scan.
    const attachPartitions = async (d: string, table: GptTable) => {
      const devices: string[] = [];
      for (const p of table.partitions) {
        const offset = Number(p.firstLba) * table.sectorSize;
        const size = Number(p.lastLba - p.firstLba + 1n) * table.sectorSize;
        const dev = await losetup(["-f", "--show", "-o", String(offset), "--sizelimit", String(size), d]);
        loops.unshift(dev);
        devices.push(dev);
      }
      return devices;
    };
    const installed = await installToDisk({
      disk,
      source: { kernel: need("kernel"), initramfs: need("initramfs") },
      cmdline: need("cmdline"),
      version: contractTag,
      arch,
      ...(typeof flags["grub-lib"] === "string" ? { grubLib: flags["grub-lib"] } : {}),
      workDir: work,
      mounter: systemMounter(),
      attachPartitions,
      log,
    });
    for (const name of ["STATE", "EPHEMERAL"] as const)
      await makeFilesystem(installed.partitions[name], volumeFilesystems[name], name);
    log.info("disk image written", { out, sizeMiB, arch });
  } finally {
    for (const l of loops)
      await losetup(["-d", l]).catch((err: unknown) =>
        log.warn("detaching a loop device failed", { device: l, error: describeError(err) }),
      );
    await fs.rm(work, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`disk-image: ${describeError(err)}\n`);
  process.exit(1);
});
