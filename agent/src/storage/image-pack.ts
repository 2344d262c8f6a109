// Packs a platform's raw disk into the file its cloud imports, with Debian's tools as
// Talos's imager does: qemu-img for qcow2, VHD and stream-optimized VMDK, xz/gzip/zstd,
// and GNU tar for GCE's disk.raw and the OVA.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { SystemError } from "../errors.js";
import { runTool } from "../sys/exec.js";
import { ovaFiles, renderManifest, renderOvf } from "./ova.js";
import type { PlatformImage } from "./platform-images.js";

const MiB = 1024 * 1024;
// Packing an 8 GiB disk takes minutes; a hung tool still ends.
const toolTimeoutMs = 60 * 60_000;

export interface PackOptions {
  /** Scratch space for intermediate files (the converted disk, the OVA's members). */
  workDir: string;
  /** Compressor threads (the build host's cores are shared). */
  threads: number;
}

/** Runs a tool whose standard output is the result, written to `out`. */
async function runToFile(command: string, args: readonly string[], out: string): Promise<void> {
  const file = await fs.open(out, "w");
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(command, [...args], { stdio: ["ignore", file.fd, "pipe"] });
      let stderr = "";
      child.stderr?.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
      child.on("error", (err) =>
        reject(new SystemError(`${command} could not be started`, { command }, { cause: err })),
      );
      child.on("close", (code) => {
        if (code === 0) resolve();
        else
          reject(
            new SystemError(
              `${command} ${args.join(" ")}: ${stderr.trim().split("\n").slice(-3).join("; ") || `exit status ${code}`}`,
              { command, args: [...args] },
            ),
          );
      });
    });
  } finally {
    await file.close();
  }
}

async function sha256(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

const qemuImgConvert = (from: string, to: string, format: string, options: string) =>
  runTool("qemu-img", ["convert", "-f", "raw", "-O", format, ...(options ? ["-o", options] : []), from, to], {
    timeoutMs: toolTimeoutMs,
  });

/** An OVA (a tar whose first member is the OVF) around the raw disk converted to a stream-optimized VMDK. */
async function packOva(raw: string, image: PlatformImage, out: string, workDir: string): Promise<void> {
  const dir = path.join(workDir, "ova");
  await fs.mkdir(dir, { recursive: true });
  const vmdk = path.join(dir, ovaFiles.disk);
  await qemuImgConvert(raw, vmdk, "vmdk", image.formatOptions);
  const ovf = renderOvf({
    fileBytes: (await fs.stat(vmdk)).size,
    capacityMiB: Math.ceil((await fs.stat(raw)).size / MiB),
  });
  await fs.writeFile(path.join(dir, ovaFiles.ovf), ovf);
  const manifest = renderManifest({
    [ovaFiles.disk]: await sha256(vmdk),
    [ovaFiles.ovf]: createHash("sha256").update(ovf).digest("hex"),
  });
  await fs.writeFile(path.join(dir, ovaFiles.manifest), manifest);
  // OVF 1.0 asks for a POSIX ustar archive, the descriptor first.
  await runTool("tar", ["--format=ustar", "-cf", out, "-C", dir, ovaFiles.ovf, ovaFiles.manifest, ovaFiles.disk], {
    timeoutMs: toolTimeoutMs,
  });
  await fs.rm(dir, { recursive: true, force: true });
}

/** GCE's import format: a gzipped GNU (oldgnu) tar holding one sparse file named disk.raw. */
async function packGceTar(raw: string, out: string, workDir: string): Promise<void> {
  const dir = path.join(workDir, "gce");
  await fs.mkdir(dir, { recursive: true });
  const member = path.join(dir, "disk.raw");
  await fs.rm(member, { force: true });
  await fs.link(raw, member);
  try {
    await runTool("tar", ["--format=oldgnu", "--sparse", "-czf", out, "-C", dir, "disk.raw"], {
      timeoutMs: toolTimeoutMs,
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function compress(file: string, packing: "xz" | "gz" | "zst", out: string, threads: number): Promise<void> {
  const t = String(threads);
  const tool: Record<typeof packing, [string, string[]]> = {
    // xz -0 as Talos's imager: the disk is mostly zeros and level 0 is several times faster.
    xz: ["xz", ["-0", "-T", t, "-c", file]],
    gz: ["gzip", ["-6", "-n", "-c", file]],
    zst: ["zstd", ["-q", "-T" + t, "-c", file]],
  };
  const [command, args] = tool[packing];
  await runToFile(command, args, out);
}

/**
 * Writes `out` from the raw disk `raw` as `image` says. A VHD's raw is first extended to a
 * whole MiB (Azure rejects any other size), so `raw` may grow; it is not otherwise changed.
 */
export async function packImage(raw: string, image: PlatformImage, out: string, opts: PackOptions): Promise<void> {
  await fs.mkdir(opts.workDir, { recursive: true });
  await fs.rm(out, { force: true });
  if (image.format === "ova") {
    await packOva(raw, image, out, opts.workDir);
    return;
  }
  let disk = raw;
  if (image.format !== "raw") {
    if (image.format === "vpc") {
      const size = (await fs.stat(raw)).size;
      await fs.truncate(raw, Math.ceil(size / MiB) * MiB);
    }
    disk = path.join(opts.workDir, `${image.platform}.${image.format}`);
    await qemuImgConvert(raw, disk, image.format, image.formatOptions);
  }
  try {
    if (image.packing === "tar.gz") await packGceTar(disk, out, opts.workDir);
    else if (image.packing === "none") await fs.copyFile(disk, out);
    else await compress(disk, image.packing, out, opts.threads);
  } finally {
    if (disk !== raw) await fs.rm(disk, { force: true });
  }
}
